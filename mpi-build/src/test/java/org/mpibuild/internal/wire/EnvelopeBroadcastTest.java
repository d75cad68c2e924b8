package org.mpibuild.internal.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.mpibuild.internal.comm.Backoff;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.internal.settings.TestSettings;
import org.mpibuild.spi.Communicator;
import org.mpibuild.testkit.CorruptingCommunicator;
import org.mpibuild.testkit.InProcessCommunicator;

/** The envelope broadcast alone: its eager first message, the pieces that follow it, their checks. */
class EnvelopeBroadcastTest {
  static final Settings SETTINGS = TestSettings.local(Settings.DEFAULT_CHUNK_BYTES, 1L << 30);
  static final Backoff WAITING = new Backoff(0);

  static Envelope envelope(int bytes) {
    byte[] b = new byte[bytes];
    new Random(bytes).nextBytes(b);
    return Envelope.ok(Envelope.Metadata.built("fake", "cpu", List.of("k"), "-O2", "", "", ""), Payload.copyOf(b));
  }

  /** Broadcasts {@code sent} from rank 0 to {@code size} in-process ranks; what each rank got (null on the root). */
  static List<EnvelopeBroadcast.Received> broadcast(InProcessCommunicator.World world, int size, Settings settings,
      Envelope sent, IntFunction<Communicator> wrap) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(size);
    try {
      List<Future<EnvelopeBroadcast.Received>> futures = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        int rank = r;
        futures.add(pool.submit(() -> {
          Communicator wrapped = wrap.apply(rank);
          Communicator comm = wrapped != null ? wrapped : world.rank(rank);
          return new EnvelopeBroadcast(settings, WAITING).broadcast(comm, rank == 0 ? sent : null, 0, false);
        }));
      }
      List<EnvelopeBroadcast.Received> out = new ArrayList<>();
      for (Future<EnvelopeBroadcast.Received> f : futures) {
        out.add(f.get(60, TimeUnit.SECONDS));
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  static List<InProcessCommunicator.Call> broadcastsOf(InProcessCommunicator.World world, int rank) {
    return world.calls().stream().filter(c -> c.rank() == rank && c.operation().equals("broadcast")).toList();
  }

  @Test
  void aSmallBinaryTakesOneEagerBroadcast() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 10_000);
    Envelope sent = envelope(1000);
    List<EnvelopeBroadcast.Received> got = broadcast(world, 3, SETTINGS, sent, r -> null);
    for (int r = 1; r < 3; r++) {
      assertNull(got.get(r).problem);
      assertArrayEquals(sent.payload().toByteArray(), got.get(r).envelope.payload().toByteArray());
      List<InProcessCommunicator.Call> calls = broadcastsOf(world, r);
      assertEquals(1, calls.size(), "one broadcast: " + calls);
      assertEquals(EnvelopeBroadcast.INLINE_LIMIT, calls.get(0).bytes());
    }
    // Under Open MPI's shared-memory eager limit (4 KiB, its own message header included): no rendezvous.
    assertTrue(EnvelopeBroadcast.INLINE_LIMIT + 256 <= 4096);
  }

  @Test
  void aLargeBinaryFollowsTheEagerMessageInChunks() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 10_000);
    int bytes = 3 * Payload.CHECK_BLOCK_BYTES + 5;
    Settings settings = TestSettings.withChunkBytes(SETTINGS, Payload.CHECK_BLOCK_BYTES);
    Envelope sent = envelope(bytes);
    List<EnvelopeBroadcast.Received> got = broadcast(world, 2, settings, sent, r -> null);
    assertNull(got.get(1).problem);
    assertArrayEquals(sent.payload().toByteArray(), got.get(1).envelope.payload().toByteArray());
    List<InProcessCommunicator.Call> calls = broadcastsOf(world, 1);
    assertEquals(EnvelopeBroadcast.INLINE_LIMIT, calls.get(0).bytes(), "the first message stays eager: " + calls);
    assertEquals(4, calls.size(), "the first message, then three pieces: " + calls);
    assertTrue(calls.stream().allMatch(c -> c.bytes() <= settings.chunkBytes()), calls.toString());
    long prefix = Envelope.HEADER_BYTES + sent.encodeMetadata().length + Payload.checksBytes(bytes);
    assertEquals(prefix + bytes, calls.stream().mapToLong(InProcessCommunicator.Call::bytes).sum());
  }

  /** Whichever piece after the eager message a bad link flips, the receiver refuses the binary; others keep it. */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void aCorruptPieceIsCaught(int broadcastNumber) throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 10_000);
    Settings settings = TestSettings.withChunkBytes(SETTINGS, Payload.CHECK_BLOCK_BYTES);
    Envelope sent = envelope(3 * Payload.CHECK_BLOCK_BYTES + 5);
    List<EnvelopeBroadcast.Received> got = broadcast(world, 3, settings, sent,
        r -> r == 1 ? new CorruptingCommunicator(world.rank(1), broadcastNumber) : null);
    assertNull(got.get(1).envelope, "the corrupt binary was accepted");
    assertNotNull(got.get(1).problem);
    assertTrue(got.get(1).problem.contains("failed its CRC32C check"), got.get(1).problem);
    assertNull(got.get(2).problem, "the intact rank");
    assertArrayEquals(sent.payload().toByteArray(), got.get(2).envelope.payload().toByteArray());
  }

  /** A corrupt byte of the binary inside the eager first message is caught as well. */
  @Test
  void aCorruptByteInTheFirstMessagesBinaryIsCaught() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 10_000);
    Envelope sent = envelope(1000);
    Communicator flipLast = new org.mpibuild.spi.ForwardingCommunicator(world.rank(1)) {
      @Override
      public Request iBroadcast(java.nio.ByteBuffer buffer, int root) {
        Request r = inner.iBroadcast(buffer, root);
        r.await();
        int last = buffer.position() + Envelope.HEADER_BYTES + sent.encodeMetadata().length
            + (int) Payload.checksBytes(1000) + 999;
        buffer.put(last, (byte) (buffer.get(last) ^ 0x10));
        return Request.COMPLETED;
      }

      @Override
      public void close() {}
    };
    List<EnvelopeBroadcast.Received> got = broadcast(world, 2, SETTINGS, sent, r -> r == 1 ? flipLast : null);
    assertNull(got.get(1).envelope);
    assertTrue(got.get(1).problem.contains("failed its CRC32C check"), got.get(1).problem);
  }
}
