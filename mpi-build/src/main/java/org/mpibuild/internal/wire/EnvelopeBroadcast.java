package org.mpibuild.internal.wire;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32C;
import org.mpibuild.CorruptBinaryException;
import org.mpibuild.internal.comm.Backoff;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.spi.Communicator;

/**
 * The envelope broadcast. On the wire, one stream: the header, the metadata, the check table (a CRC32C for
 * every 1 MiB block of the binary, then the table's own CRC32C), then the binary. A small first message of
 * fixed size ({@link #INLINE_LIMIT}, under the transport's eager limit) carries the start of that stream, so
 * that a small kernel travels in one eager broadcast; the rest follows in pieces of
 * {@code MPI_BUILD_CHUNK_BYTES}, all started at once.
 *
 * <p>Receivers check the header before allocating. While piece i+1 arrives they check the blocks of piece i
 * against the root's CRC32C values, between polls of MPI, so that the check overlaps the transfer where MPI
 * moves data outside the receiver's own polls (a transport that copies on the receiver's thread, as Open
 * MPI's shared memory with CMA does, runs the copy and the check one after the other), and no
 * byte is loaded unchecked. The root's SHA-256 travels in the header and stays the binary's identity.
 * Receive buffers are reused: the first message's always, the binary's once the kernel that held it is
 * closed (one buffer is kept, as large as the largest binary received).
 */
public final class EnvelopeBroadcast {
  /**
   * Largest first message: header, metadata and the start of the binary travel together. Small enough to go
   * eagerly (Open MPI's shared-memory transport sends up to 4 KiB, its own header included, without waiting
   * for the receiver; its TCP transport up to 64 KiB), so that the root's first broadcast completes without
   * a handshake and a small kernel costs one eager broadcast. A 64 KiB first message took a rendezvous
   * through every level of the broadcast tree: at 4 ranks on 2 cores, 1 KiB cost the raw broadcast plus
   * about 0.4 ms (median of paired repetitions), against 0.1 to 0.2 ms with this one (BcastBench,
   * 2026-12-03). A binary above about 3 KiB takes one more broadcast for the rest.
   */
  static final int INLINE_LIMIT = 3584;
  /** Bytes checked between two polls of MPI. */
  static final int CHECK_STEP = 256 << 10;

  private final Settings settings;
  private final Backoff waiting;
  private final AtomicReference<ByteBuffer> firstBuffer = new AtomicReference<>();
  private final AtomicReference<ByteBuffer> spare = new AtomicReference<>();

  public EnvelopeBroadcast(Settings settings, Backoff waiting) {
    this.settings = settings;
    this.waiting = waiting;
  }

  /** What a receiver got: the header always, the rest unless it was corrupt. */
  public static final class Received {
    Envelope.Header header;
    Envelope.Metadata metadata;
    Envelope envelope;
    String problem;
    long headerNanos;

    /** The header, which always arrives. */
    public Envelope.Header header() {
      return header;
    }

    /** The metadata, or null if it arrived corrupt. */
    public Envelope.Metadata metadata() {
      return metadata;
    }

    /** The whole envelope, or null if it arrived corrupt. */
    public Envelope envelope() {
      return envelope;
    }

    /** What was corrupt, or null. */
    public String problem() {
      return problem;
    }

    /** How long the header took to arrive. */
    public long headerNanos() {
      return headerNanos;
    }
  }

  /**
   * The size of the first message: the header, then as much of the rest as fits. Never more than the
   * piece size, never less than the header.
   */
  private int firstMessageBytes() {
    return Math.max(Envelope.HEADER_BYTES, Math.min(INLINE_LIMIT, settings.chunkBytes()));
  }

  /** How many prefix (metadata and check table) and binary bytes the first message carries. */
  private record Inline(int prefix, int payload) {
    static Inline of(int first, long prefixLength, long payloadLength) {
      int prefix = (int) Math.min(prefixLength, first - Envelope.HEADER_BYTES);
      int payload = prefix == prefixLength ? (int) Math.min(payloadLength, first - Envelope.HEADER_BYTES - prefix) : 0;
      return new Inline(prefix, payload);
    }
  }

  /**
   * Sends {@code sent} from {@code root}, or receives it; null on the root. Collective. With {@code lend},
   * a receiver's binary may live in the pool's buffer, which the payload's holder must release when done
   * (a kernel, when it closes); without, it has memory of its own (binary data that the caller keeps).
   */
  public Received broadcast(Communicator comm, Envelope sent, int root, boolean lend) {
    int first = firstMessageBytes();
    ByteBuffer pooled = take(firstBuffer, first);
    ByteBuffer message = pooled.duplicate().clear().limit(first).slice();
    try {
      return comm.rank() == root ? send(comm, sent, root, message, first) : receive(comm, root, message, first, lend);
    } finally {
      give(firstBuffer, pooled);
    }
  }

  private Received send(Communicator comm, Envelope sent, int root, ByteBuffer message, int first) {
    byte[] meta = sent.encodeMetadata();
    byte[] checks = Payload.encodeChecks(sent.payload().blockChecks());
    ByteBuffer prefix = ByteBuffer.allocate(meta.length + checks.length).put(meta).put(checks).flip();
    Payload payload = sent.payload();
    Inline inline = Inline.of(first, prefix.remaining(), payload.length());
    message.clear().put(sent.encodeHeader(meta)).put(prefix.duplicate().limit(inline.prefix()));
    payload.copyTo(message.slice().limit(inline.payload()));
    // Every message is a non-blocking broadcast on every rank (MPI never matches a blocking collective with
    // a non-blocking one), all started at once.
    List<Communicator.Request> started = new ArrayList<>();
    started.add(comm.iBroadcast(message.clear(), root));
    if (prefix.remaining() > inline.prefix()) {
      ByteBuffer rest = ByteBuffer.allocateDirect(prefix.remaining() - inline.prefix())
          .put(prefix.position(inline.prefix())).flip();
      piecesOf(rest).forEach(p -> started.add(comm.iBroadcast(p, root)));
    }
    payload.pieces(inline.payload(), settings.chunkBytes()).forEach(p -> started.add(comm.iBroadcast(p, root)));
    started.forEach(waiting::await);
    return null;
  }

  private Received receive(Communicator comm, int root, ByteBuffer message, int first, boolean lend) {
    // The first message may wait for a compile: the wait sleeps, leaving the cores to the compiles.
    waiting.await(comm.iBroadcast(message.clear(), root));
    Received r = new Received();
    r.headerNanos = System.nanoTime();
    r.header = header(comm, root, message);
    long length = r.header.payloadLength();
    int metaLength = r.header.metadataLength();
    long prefixLength = metaLength + Payload.checksBytes(length);
    Inline inline = Inline.of(first, prefixLength, length);
    ByteBuffer prefix = message.duplicate().position(Envelope.HEADER_BYTES)
        .limit(Envelope.HEADER_BYTES + inline.prefix()).slice();
    List<Communicator.Request> prefixRequests = new ArrayList<>();
    if (prefixLength > inline.prefix()) {
      ByteBuffer whole = ByteBuffer.allocateDirect((int) prefixLength).put(prefix);
      piecesOf(whole.slice()).forEach(p -> prefixRequests.add(comm.iBroadcast(p, root)));
      prefix = whole.clear();
    }
    if (length > settings.maxBinaryBytes()) {
      prefixRequests.forEach(waiting::await);
      r.problem = refuse(comm, root, length, inline.payload());
      return r;
    }
    ByteBuffer inlinePayload = message.duplicate().position(Envelope.HEADER_BYTES + inline.prefix())
        .limit(Envelope.HEADER_BYTES + inline.prefix() + inline.payload());
    Payload payload = lend ? receiveBuffer(length) : Payload.allocate(length);
    payload.copyFrom(inlinePayload);
    List<Communicator.Request> pieces = new ArrayList<>();
    payload.pieces(inline.payload(), settings.chunkBytes()).forEach(p -> pieces.add(comm.iBroadcast(p, root)));
    prefixRequests.forEach(waiting::await);
    int[] checks = metadataAndChecks(r, prefix, metaLength, length);
    Checker checker = new Checker(payload, r.problem == null ? checks : null);
    checker.arrived(inline.payload());
    List<Integer> sizes = Payload.pieceSizes(length, settings.chunkBytes(), inline.payload());
    for (int i = 0; i < pieces.size(); i++) {
      waiting.await(pieces.get(i), checker::step);
      checker.arrived(sizes.get(i));
    }
    while (checker.step()) {
      // check the last piece
    }
    r.problem = r.problem != null ? r.problem : checker.problem;
    seal(r, payload);
    return r;
  }

  /**
   * The header of the first message. Without a trustworthy header this rank cannot know how many pieces
   * follow, so it cannot keep in step with the others: ending the job is the only way to leave nobody
   * waiting.
   */
  private static Envelope.Header header(Communicator comm, int root, ByteBuffer message) {
    try {
      return Envelope.decodeHeader(message.duplicate().limit(Envelope.HEADER_BYTES), Long.MAX_VALUE);
    } catch (CorruptBinaryException e) {
      comm.abort("mpi-build: rank " + comm.rank() + " received a corrupt header from root " + root + ": "
          + e.getMessage(), 3);
      throw e;
    }
  }

  /** Keeps in step with a bounded scratch buffer, one piece at a time, then says why the binary is refused. */
  private String refuse(Communicator comm, int root, long length, int inlinePayload) {
    ByteBuffer scratch = ByteBuffer.allocateDirect((int) Math.min(settings.chunkBytes(), length));
    for (int size : Payload.pieceSizes(length, settings.chunkBytes(), inlinePayload)) {
      waiting.await(comm.iBroadcast(scratch.clear().limit(size), root));
    }
    return "binary of " + length + " bytes exceeds this rank's limit of " + settings.maxBinaryBytes()
        + " (MPI_BUILD_MAX_BINARY_BYTES)";
  }

  /** Decodes the metadata into {@code r} and returns the check table; a corrupt one sets {@code r.problem}. */
  private static int[] metadataAndChecks(Received r, ByteBuffer prefix, int metaLength, long length) {
    byte[] meta = new byte[metaLength];
    prefix.duplicate().get(meta);
    int[] checks = Payload.decodeChecks(prefix.duplicate().position(metaLength));
    try {
      r.metadata = Envelope.decodeMetadata(r.header, meta);
      if (checks == null || checks.length != Payload.blockCount(length)) {
        throw new CorruptBinaryException("the binary's check table arrived corrupt");
      }
    } catch (CorruptBinaryException e) {
      r.problem = e.getMessage();
    }
    return checks;
  }

  /** Makes the checked envelope, or releases the payload when something arrived corrupt. */
  private static void seal(Received r, Payload payload) {
    if (r.problem == null) {
      try {
        r.envelope = Envelope.checkedInTransit(r.header, r.metadata, payload);
      } catch (CorruptBinaryException e) {
        r.problem = e.getMessage();
      }
    }
    if (r.envelope == null) {
      payload.release();
    }
  }


  /**
   * Checks the blocks of a payload as they arrive, a bounded step at a time, against the root's CRC32C
   * values. Remembers the first block that fails.
   */
  private static final class Checker {
    private final Payload payload;
    private final int[] expected;
    private final CRC32C crc = new CRC32C();
    private long arrived;
    private int block;
    private int done; // bytes of the current block already in crc
    String problem;

    Checker(Payload payload, int[] expected) {
      this.payload = payload;
      this.expected = expected;
    }

    void arrived(long bytes) {
      arrived += bytes;
    }

    /** Checks up to {@link #CHECK_STEP} bytes that have arrived; false when none were waiting. */
    boolean step() {
      if (expected == null || problem != null || block >= expected.length) {
        return false;
      }
      int blockBytes = payload.blockBytes(block);
      long blockStart = (long) block * Payload.CHECK_BLOCK_BYTES;
      int available = (int) Math.min(blockBytes, arrived - blockStart);
      if (available <= done) {
        return false;
      }
      int to = Math.min(available, done + CHECK_STEP);
      int value = payload.blockCheck(block, done, to, crc);
      done = to;
      if (done == blockBytes) {
        if (value != expected[block]) {
          problem = "binary block " + block + " (bytes " + blockStart + " to " + (blockStart + blockBytes)
              + ") failed its CRC32C check against the root's: corrupted in transit";
        }
        block++;
        done = 0;
        crc.reset();
      }
      return true;
    }
  }

  /** A payload for {@code length} received bytes, in the spare buffer when it is large enough. */
  private Payload receiveBuffer(long length) {
    if (length > Payload.REGION_BYTES || length == 0) {
      return Payload.allocate(length);
    }
    ByteBuffer buffer = take(spare, (int) length);
    return Payload.lent(buffer, (int) length, () -> give(spare, buffer));
  }

  /** Takes the pooled buffer if it holds {@code bytes}, else a new one. */
  private static ByteBuffer take(AtomicReference<ByteBuffer> pool, int bytes) {
    ByteBuffer b = pool.getAndSet(null);
    return b != null && b.capacity() >= bytes ? b.clear().limit(bytes) : ByteBuffer.allocateDirect(bytes);
  }

  /** Gives a buffer back to the pool, which keeps the larger one. */
  private static void give(AtomicReference<ByteBuffer> pool, ByteBuffer b) {
    pool.getAndUpdate(cur -> cur == null || cur.capacity() < b.capacity() ? b : cur);
  }

  private List<ByteBuffer> piecesOf(ByteBuffer whole) {
    return Payload.slices(whole, 0, settings.chunkBytes());
  }
}
