package org.mpibuild.opencl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;
import org.mpibuild.streams.DeviceFailure;
import org.mpibuild.streams.DeviceStep;
import org.mpibuild.streams.Gate;
import org.mpibuild.streams.StreamOrderedMessages;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * Stream-ordered collectives ({@link StreamOrderedMessages#broadcast}, {@link StreamOrderedMessages#allReduce})
 * at 2 to 4 ranks in one JVM, on the in-process communicator, with a simulated device: each "device buffer"
 * is a heap buffer, the read that fills a staging buffer finishes after a random delay (a slow queue), and
 * the write behind a gate copies the result back only once the gate has opened. No OpenCL device is needed.
 */
class StreamOrderedCollectivesTest {
  /** A simulated device buffer and its copies to and from staging. */
  static final class FakeBuffer {
    final ByteBuffer data;

    FakeBuffer(int bytes) {
      data = ByteBuffer.allocate(bytes).order(ByteOrder.nativeOrder());
    }
  }

  /** The read into staging: the data is taken at enqueue (in-order queue), it finishes after a delay. */
  static final class Read implements DeviceStep {
    final long readyAt;
    volatile boolean held;
    volatile RuntimeException error;
    volatile boolean released;

    Read(FakeBuffer from, ByteBuffer staging, long delayNanos) {
      staging.duplicate().put(from.data.duplicate().rewind());
      readyAt = System.nanoTime() + delayNanos;
    }

    @Override
    public boolean finished() {
      if (error != null) {
        throw error;
      }
      return !held && System.nanoTime() - readyAt >= 0;
    }

    @Override
    public void release() {
      released = true;
    }
  }

  /** The user event and the write behind it: the write copies the staging buffer only once opened. */
  static final class GatedWrite implements Gate, DeviceStep {
    final FakeBuffer to;
    final ByteBuffer staging;
    volatile boolean opened;
    volatile boolean failed;
    volatile long openedAt;

    GatedWrite(FakeBuffer to, ByteBuffer staging) {
      this.to = to;
      this.staging = staging;
    }

    @Override
    public void open() {
      openedAt = System.nanoTime();
      opened = true;
    }

    @Override
    public void fail() {
      failed = true;
    }

    @Override
    public boolean finished() {
      if (!opened) {
        throw new AssertionError("the write was polled before its gate opened");
      }
      to.data.clear();
      to.data.put(staging.duplicate());
      to.data.clear();
      return true;
    }

    @Override
    public void release() {}
  }

  /** One rank's messenger-like front: the same calls QueueMessenger makes, on simulated buffers. */
  static final class Rank {
    final StreamOrderedMessages messages;
    final int rank;

    Rank(Communicator comm, Duration deadline) {
      this.messages = new StreamOrderedMessages(comm, "rank " + comm.rank(), deadline, code -> "CODE" + code);
      this.rank = comm.rank();
    }

    Read lastRead;
    GatedWrite lastWrite;
    /** Whether the next read starts held (its queue has not produced the buffer), set before it is enqueued. */
    boolean holdNextRead;
    /** The error the next read reports, set before it is enqueued so that no pass can see it succeed. */
    RuntimeException nextReadError;

    private Read read(FakeBuffer buffer, ByteBuffer staging, long delay) {
      Read r = new Read(buffer, staging, delay);
      r.held = holdNextRead;
      r.error = nextReadError;
      holdNextRead = false;
      nextReadError = null;
      return r;
    }

    CompletableFuture<Void> allReduce(FakeBuffer buffer, int count, Datatype type, ReduceOp op, long delay) {
      int bytes = count * type.bytes();
      ByteBuffer send = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
      ByteBuffer receive = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
      lastRead = read(buffer, send, delay);
      lastWrite = new GatedWrite(buffer, receive);
      return messages.allReduce(send, receive, count, type, op, lastRead, lastWrite, lastWrite);
    }

    CompletableFuture<Void> broadcast(FakeBuffer buffer, int root, long delay) {
      int bytes = buffer.data.capacity();
      ByteBuffer staging = ByteBuffer.allocateDirect(StreamOrderedMessages.BROADCAST_HEADER + bytes);
      ByteBuffer data = staging.slice(StreamOrderedMessages.BROADCAST_HEADER, bytes);
      if (rank == root) {
        lastRead = read(buffer, data, delay);
        lastWrite = null;
        return messages.broadcast(staging, root, lastRead, null, null);
      }
      lastRead = null;
      lastWrite = new GatedWrite(buffer, data);
      return messages.broadcast(staging, root, null, lastWrite, lastWrite);
    }
  }

  static FakeBuffer ints(int... values) {
    FakeBuffer b = new FakeBuffer(values.length * 4);
    for (int i = 0; i < values.length; i++) {
      b.data.putInt(i * 4, values[i]);
    }
    return b;
  }

  static long millis(Random random, int max) {
    return TimeUnit.MILLISECONDS.toNanos(random.nextInt(max + 1));
  }

  /** Runs {@code body} for every rank on its own thread, each with its own engine(s), and joins them. */
  interface RankBody {
    void run(Communicator comm) throws Exception;
  }

  static void ranks(int n, RankBody body) throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(n, 20_000);
    List<Throwable> errors = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      Communicator comm = world.rank(r);
      Thread t = new Thread(() -> {
        try {
          body.run(comm);
        } catch (Throwable e) {
          synchronized (errors) {
            errors.add(new AssertionError("rank " + comm.rank() + ": " + e, e));
          }
        }
      });
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join(60_000);
      assertFalse(t.isAlive(), "a rank hung");
    }
    if (!errors.isEmpty()) {
      AssertionError all = new AssertionError(errors.size() + " rank(s) failed: " + errors);
      errors.forEach(all::addSuppressed);
      throw all;
    }
  }

  /** What MPI computes for rank r's value v(r) = (r + 1) * (i + 1), by type and op, as a double. */
  static double expected(int n, int i, ReduceOp op) {
    double sum = 0;
    double min = Double.MAX_VALUE;
    double max = -Double.MAX_VALUE;
    for (int r = 0; r < n; r++) {
      double v = (double) (r + 1) * (i + 1) * (r % 2 == 0 ? 1 : -1);
      sum += v;
      min = Math.min(min, v);
      max = Math.max(max, v);
    }
    return switch (op) {
      case SUM -> sum;
      case MIN -> min;
      case MAX -> max;
    };
  }

  static FakeBuffer values(int rank, int count, Datatype type) {
    FakeBuffer b = new FakeBuffer(count * type.bytes());
    for (int i = 0; i < count; i++) {
      double v = (double) (rank + 1) * (i + 1) * (rank % 2 == 0 ? 1 : -1);
      switch (type) {
        case INT -> b.data.putInt(i * 4, (int) v);
        case LONG -> b.data.putLong(i * 8, (long) v);
        case FLOAT -> b.data.putFloat(i * 4, (float) v);
        case DOUBLE -> b.data.putDouble(i * 8, v);
      }
    }
    return b;
  }

  static double valueAt(FakeBuffer b, int i, Datatype type) {
    return switch (type) {
      case INT -> b.data.getInt(i * 4);
      case LONG -> b.data.getLong(i * 8);
      case FLOAT -> b.data.getFloat(i * 4);
      case DOUBLE -> b.data.getDouble(i * 8);
    };
  }

  /** Every type and op, with each rank's reads late by a random delay: every rank gets MPI's result. */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void everyTypeAndOpReducesInPlaceWhateverTheQueuesTiming(int n) throws Exception {
    ranks(n, comm -> {
      Random random = new Random(comm.rank() * 7919L + n);
      Rank me = new Rank(comm, Duration.ofSeconds(30));
      try (StreamOrderedMessages ignored = me.messages) {
        List<CompletableFuture<Void>> futures = new ArrayList<>();
        List<FakeBuffer> buffers = new ArrayList<>();
        for (Datatype type : Datatype.values()) {
          for (ReduceOp op : ReduceOp.values()) {
            FakeBuffer b = values(comm.rank(), 5, type);
            buffers.add(b);
            futures.add(me.allReduce(b, 5, type, op, millis(random, 15)));
          }
        }
        int k = 0;
        for (Datatype type : Datatype.values()) {
          for (ReduceOp op : ReduceOp.values()) {
            futures.get(k).get(30, TimeUnit.SECONDS);
            for (int i = 0; i < 5; i++) {
              assertEquals(expected(n, i, op), valueAt(buffers.get(k), i, type), 1e-3, type + " " + op + " [" + i + "]");
            }
            k++;
          }
        }
      }
    });
  }

  /**
   * The gate (and so the marker or kernel queued after it) opens only when the result is on the host: while
   * the last rank's read is held, no rank's gate opens, and the write copies the reduced values (MPICH
   * #7612: an event recorded after the enqueue completed before the operation had).
   */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void workQueuedAfterAnAllReduceWaitsForItsResult(int n) throws Exception {
    CompletableFuture<Void> release = new CompletableFuture<>();
    ranks(n, comm -> {
      Rank me = new Rank(comm, Duration.ofSeconds(30));
      try (StreamOrderedMessages ignored = me.messages) {
        FakeBuffer b = ints(comm.rank() + 1, 10 * (comm.rank() + 1));
        me.holdNextRead = comm.rank() == n - 1; // this rank's queue has not produced the buffer yet
        CompletableFuture<Void> f = me.allReduce(b, 2, Datatype.INT, ReduceOp.SUM, 0);
        if (comm.rank() == n - 1) {
          Thread.sleep(150);
          long heldUntil = System.nanoTime();
          me.lastRead.held = false;
          release.complete(null);
          f.get(30, TimeUnit.SECONDS);
          assertTrue(me.lastWrite.openedAt - heldUntil > 0);
        } else {
          Thread.sleep(100);
          assertFalse(me.lastWrite.opened, "rank " + comm.rank() + "'s gate opened before the last rank's data was read");
          assertFalse(f.isDone());
          release.get(30, TimeUnit.SECONDS);
          f.get(30, TimeUnit.SECONDS);
        }
        int sum = n * (n + 1) / 2;
        assertEquals(sum, b.data.getInt(0));
        assertEquals(10 * sum, b.data.getInt(4));
      }
    });
  }

  /**
   * Two helpers (two queues) on one rank share a communicator: A on the first, B on the second, C on the
   * first, enqueued in that order on every rank, with each rank's queues slow in a different way. Without a
   * shared ticket order, a helper whose data is ready first would start its collective first, and ranks would
   * match A with B (the in-process world fails on mismatched collectives, and the sums would be wrong).
   */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void twoHelpersOnOneRankDoNotReorderEachOthersCollectives(int n) throws Exception {
    ranks(n, comm -> {
      Random random = new Random(comm.rank() + 31L * n);
      Rank first = new Rank(comm, Duration.ofSeconds(30));
      Rank second = new Rank(comm, Duration.ofSeconds(30));
      try (StreamOrderedMessages a = first.messages; StreamOrderedMessages b = second.messages) {
        for (int round = 0; round < 5; round++) {
          boolean firstSlow = (comm.rank() + round) % 2 == 0;
          FakeBuffer x = ints(comm.rank() + 1);
          FakeBuffer y = values(comm.rank(), 3, Datatype.DOUBLE);
          FakeBuffer z = ints(100 * (comm.rank() + 1), 7);
          CompletableFuture<Void> fx = first.allReduce(x, 1, Datatype.INT, ReduceOp.SUM, firstSlow ? millis(random, 40) + 20_000_000 : 0);
          CompletableFuture<Void> fy = second.allReduce(y, 3, Datatype.DOUBLE, ReduceOp.MAX, firstSlow ? 0 : millis(random, 40));
          CompletableFuture<Void> fz = first.broadcast(z, n - 1, firstSlow ? millis(random, 10) : 0);
          CompletableFuture.allOf(fx, fy, fz).get(30, TimeUnit.SECONDS);
          assertEquals(n * (n + 1) / 2, x.data.getInt(0), "round " + round);
          for (int i = 0; i < 3; i++) {
            assertEquals(expected(n, i, ReduceOp.MAX), y.data.getDouble(i * 8), 1e-9, "round " + round);
          }
          assertEquals(100 * n, z.data.getInt(0), "round " + round);
        }
      }
    });
  }

  /** A failed read on one rank fails every rank's all-reduce with one message naming it; no gate opens. */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void aFailedReadOnOneRankFailsEveryRankWithTheSameMessage(int n) throws Exception {
    List<String> messages = new ArrayList<>();
    ranks(n, comm -> {
      Rank me = new Rank(comm, Duration.ofSeconds(30));
      try (StreamOrderedMessages ignored = me.messages) {
        FakeBuffer b = ints(comm.rank() + 1);
        if (comm.rank() == 1) {
          me.nextReadError = new DeviceFailure("the device command failed: CL_OUT_OF_RESOURCES", -5);
        }
        CompletableFuture<Void> f = me.allReduce(b, 1, Datatype.INT, ReduceOp.SUM, 20_000_000);
        CompletionException e = assertThrows(CompletionException.class, f::join);
        synchronized (messages) {
          messages.add(e.getCause().getMessage());
        }
        assertTrue(me.lastWrite.failed && !me.lastWrite.opened, "the write behind the gate must end in error");
        assertEquals(comm.rank() + 1, b.data.getInt(0), "the buffer must be left as it was");
        if (comm.rank() == 1) {
          assertNotNull(e.getCause().getCause(), "the failing rank keeps its own reason as the cause");
        }
        // the next collective still works: the failure was agreed on, nothing is out of step
        FakeBuffer c = ints(1);
        me.allReduce(c, 1, Datatype.INT, ReduceOp.SUM, 0).get(30, TimeUnit.SECONDS);
        assertEquals(n, c.data.getInt(0));
      }
    });
    assertEquals(n, messages.size());
    assertEquals(1, messages.stream().distinct().count(), "every rank has the same message: " + messages);
    assertTrue(messages.get(0).contains("failed: rank 1's device work before it failed (CODE-5)"), messages.get(0));
  }

  /** The same for a broadcast whose root's read fails: the header carries the root's status. */
  @Test
  void aFailedReadOnTheRootFailsEveryRanksBroadcast() throws Exception {
    List<String> messages = new ArrayList<>();
    ranks(3, comm -> {
      Rank me = new Rank(comm, Duration.ofSeconds(30));
      try (StreamOrderedMessages ignored = me.messages) {
        FakeBuffer b = ints(comm.rank() + 1, 2);
        if (comm.rank() == 2) {
          me.nextReadError = new DeviceFailure("the device command failed", -36);
        }
        CompletableFuture<Void> f = me.broadcast(b, 2, 10_000_000);
        CompletionException e = assertThrows(CompletionException.class, f::join);
        synchronized (messages) {
          messages.add(e.getCause().getMessage());
        }
        if (comm.rank() != 2) {
          assertTrue(me.lastWrite.failed && !me.lastWrite.opened);
          assertEquals(comm.rank() + 1, b.data.getInt(0));
        }
      }
    });
    assertEquals(1, messages.stream().distinct().count(), messages.toString());
    assertTrue(messages.get(0).startsWith("broadcast of 8 bytes from rank 2") && messages.get(0)
        .contains("rank 2's device work before it failed (CODE-36)"), messages.get(0));
  }

  /**
   * Issue 44, item 9: collectives that differ between ranks (the count, the datatype, the reduction, the root,
   * the kind) are refused on every rank before any data moves: every future fails with the same message naming
   * the ranks and the field, within the deadline; every gate is released (failed), never left shut; the buffers
   * keep their values. Before, a count that differed ended the job (MPI_ERR_TRUNCATE), and the others reported
   * success with wrong values or having moved nothing.
   */
  @ParameterizedTest
  @ValueSource(strings = {"count", "datatype", "reduction", "root", "kind"})
  void collectivesThatDifferBetweenRanksFailOnEveryRankWithOneMessage(String field) throws Exception {
    List<String> messages = java.util.Collections.synchronizedList(new ArrayList<>(List.of("", "", "")));
    ranks(3, comm -> {
      Rank me = new Rank(comm, Duration.ofSeconds(20));
      try {
        boolean odd = comm.rank() == 2; // the rank that calls something else
        FakeBuffer buffer = field.equals("count") && odd ? ints(7, 8, 9, 10) : ints(7, 8);
        CompletableFuture<Void> f = switch (field) {
          case "count" -> me.allReduce(buffer, odd ? 4 : 2, Datatype.INT, ReduceOp.SUM, 0);
          case "datatype" -> me.allReduce(buffer, 2, odd ? Datatype.FLOAT : Datatype.INT, ReduceOp.SUM, 0);
          case "reduction" -> me.allReduce(buffer, 2, Datatype.INT, odd ? ReduceOp.MAX : ReduceOp.SUM, 0);
          case "root" -> me.broadcast(buffer, odd ? 1 : 0, 0);
          default -> odd ? me.broadcast(buffer, 0, 0) : me.allReduce(buffer, 2, Datatype.INT, ReduceOp.SUM, 0);
        };
        long t0 = System.nanoTime();
        CompletionException e = assertThrows(CompletionException.class, f::join);
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(10), "within the deadline");
        messages.set(comm.rank(), e.getCause().getMessage());
        if (me.lastWrite != null) {
          assertTrue(me.lastWrite.failed && !me.lastWrite.opened, "the gate is released, failed, never opened");
        }
        assertEquals(7, buffer.data.getInt(0), "the buffer keeps its values");
        assertEquals(8, buffer.data.getInt(4), "the buffer keeps its values");
      } finally {
        me.messages.close();
      }
    });
    assertEquals(messages.get(0), messages.get(1), "one message on every rank");
    assertEquals(messages.get(0), messages.get(2), "one message on every rank");
    String expected = switch (field) {
      case "count" -> "rank 2 differs in count (4)";
      case "datatype" -> "rank 2 differs in datatype (FLOAT)";
      case "reduction" -> "rank 2 differs in reduction (MAX)";
      case "root" -> "rank 2 differs in root (1)";
      default -> "rank 2 differs in kind (a broadcast)";
    };
    assertTrue(messages.get(0).startsWith("collective #0 failed: the ranks called different collectives; rank 0 called ")
        && messages.get(0).contains(expected) && !messages.get(0).contains("rank 1 differs"), messages.get(0));
  }

  /** After a refused collective, the next one, called alike, goes on: the turn passed. */
  @Test
  void aRefusedCollectiveLeavesTheNextOneFree() throws Exception {
    ranks(2, comm -> {
      Rank me = new Rank(comm, Duration.ofSeconds(20));
      try {
        CompletableFuture<Void> bad = comm.rank() == 0 ? me.allReduce(ints(1), 1, Datatype.INT, ReduceOp.SUM, 0)
            : me.allReduce(ints(1, 2), 2, Datatype.INT, ReduceOp.SUM, 0);
        FakeBuffer good = ints(comm.rank() + 1);
        CompletableFuture<Void> next = me.allReduce(good, 1, Datatype.INT, ReduceOp.SUM, 0);
        assertThrows(CompletionException.class, bad::join);
        next.get(10, TimeUnit.SECONDS);
        assertEquals(3, good.data.getInt(0));
      } finally {
        me.messages.close();
      }
    });
  }

  /** A rank that never starts the collective: rank 0 names it at the deadline and aborts; nothing hangs. */
  @Test
  void aMissedDeadlineNamesTheAbsentRank() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 20_000);
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    List<StreamOrderedMessages> helpers = new ArrayList<>();
    try {
      for (int r = 0; r < 2; r++) { // rank 2 never comes
        Rank me = new Rank(world.rank(r), Duration.ofMillis(300));
        helpers.add(me.messages);
        futures.add(me.allReduce(ints(1), 1, Datatype.INT, ReduceOp.SUM, 0));
      }
      long t0 = System.nanoTime();
      CompletionException e0 = assertThrows(CompletionException.class, futures.get(0)::join);
      assertTrue(e0.getCause().getMessage().contains("failed: ranks [2] of 3 did not start it within 300 ms"),
          e0.getCause().getMessage());
      // The future fails first, then rank 0 aborts: wait for the abort, not longer than the test's bound.
      while (world.abortMessage() == null && System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(10)) {
        Thread.sleep(10);
      }
      assertNotNull(world.abortMessage(), "rank 0 aborts the job");
      assertTrue(world.abortMessage().contains("ranks [2] of 3 did not start it"), world.abortMessage());
      // rank 0's abort ends rank 1's wait, as MPI_Abort ends every rank of the job
      CompletionException e1 = assertThrows(CompletionException.class, futures.get(1)::join);
      assertTrue(e1.getCause().getMessage().contains("the job was aborted by another rank: mpi-build: all-reduce (SUM "
          + "of 1 INT) (collective #0) failed: ranks [2] of 3 did not start it"), e1.getCause().getMessage());
      assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(10));
    } finally {
      helpers.forEach(StreamOrderedMessages::close);
    }
  }

  /** A helper closed with a collective not yet started gives up its turn: the other helper goes on. */
  @Test
  void closingAHelperDoesNotHoldBackAnotherHelpersCollectives() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(1, 20_000);
    Communicator comm = world.rank(0);
    Rank first = new Rank(comm, Duration.ofSeconds(30));
    Rank second = new Rank(comm, Duration.ofSeconds(30));
    try (StreamOrderedMessages b = second.messages) {
      first.holdNextRead = true;
      CompletableFuture<Void> held = first.allReduce(ints(1), 1, Datatype.INT, ReduceOp.SUM, 0);
      FakeBuffer y = ints(5);
      CompletableFuture<Void> next = second.allReduce(y, 1, Datatype.INT, ReduceOp.SUM, 0);
      Thread.sleep(50);
      assertFalse(next.isDone(), "the second helper's collective waits for the first's, enqueued before it");
      first.messages.close();
      assertThrows(CompletionException.class, held::join);
      next.get(10, TimeUnit.SECONDS);
      assertEquals(5, y.data.getInt(0));
    }
  }
}
