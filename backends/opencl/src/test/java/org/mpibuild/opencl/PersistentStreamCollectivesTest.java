package org.mpibuild.opencl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.mpibuild.opencl.StreamOrderedCollectivesTest.expected;
import static org.mpibuild.opencl.StreamOrderedCollectivesTest.ints;
import static org.mpibuild.opencl.StreamOrderedCollectivesTest.millis;
import static org.mpibuild.opencl.StreamOrderedCollectivesTest.values;
import static org.mpibuild.opencl.StreamOrderedCollectivesTest.valueAt;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.mpibuild.opencl.StreamOrderedCollectivesTest.FakeBuffer;
import org.mpibuild.opencl.StreamOrderedCollectivesTest.Rank;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.ForwardingCommunicator;
import org.mpibuild.streams.StreamOrderedMessages;

/**
 * Persistent collectives under stream-ordered collectives: the in-process communicator has none, so a
 * communicator that forwards to it offers them, implements each start with the in-process non-blocking
 * collective, and logs every collective call (inits, starts, non-blocking ones) in the order this rank made
 * them. MPI matches a persistent start only with the same start elsewhere, which the in-process world would
 * not notice (both are an in-process all-reduce underneath), so the logs of all ranks are compared instead.
 */
class PersistentStreamCollectivesTest {
  /** A communicator with persistent collectives, recording every collective call of its rank. */
  static final class Recording extends ForwardingCommunicator {
    final List<String> log = new ArrayList<>();
    final List<Persistent> requests = new ArrayList<>();

    Recording(Communicator inner) {
      super(inner);
    }

    synchronized void record(String what) {
      log.add(what);
    }

    synchronized List<String> log() {
      return new ArrayList<>(log);
    }

    @Override
    public String persistentCollectives() {
      return "fake persistent collectives (test)";
    }

    @Override
    public Request iBroadcast(ByteBuffer buffer, int root) {
      record("ibcast " + buffer.remaining() + " root " + root);
      return inner.iBroadcast(buffer, root);
    }

    @Override
    public Request iAllReduce(ByteBuffer send, ByteBuffer receive, int count, Datatype type, ReduceOp op) {
      record("iallreduce " + count + " " + type + " " + op);
      return inner.iAllReduce(send, receive, count, type, op);
    }

    @Override
    public PersistentRequest broadcastInit(ByteBuffer buffer, int root) {
      String key = "bcast " + buffer.remaining() + " root " + root;
      return add(key, () -> inner.iBroadcast(buffer, root));
    }

    @Override
    public PersistentRequest allReduceInit(ByteBuffer send, ByteBuffer receive, int count, Datatype type,
        ReduceOp op) {
      String key = "allreduce " + count + " " + type + " " + op;
      return add(key, () -> inner.iAllReduce(send, receive, count, type, op));
    }

    private synchronized Persistent add(String key, java.util.function.Supplier<Request> start) {
      record("init " + key);
      Persistent p = new Persistent(key, start);
      requests.add(p);
      return p;
    }

    synchronized List<Persistent> requests() {
      return new ArrayList<>(requests);
    }

    /** A persistent request that keeps the SPI's rules: one start at a time, close only when not started. */
    final class Persistent implements PersistentRequest {
      final String key;
      final java.util.function.Supplier<Request> starter;
      volatile int starts;
      volatile boolean closed;
      volatile Request current;
      volatile boolean currentDone = true;

      Persistent(String key, java.util.function.Supplier<Request> starter) {
        this.key = key;
        this.starter = starter;
      }

      @Override
      public Request start() {
        if (closed || !currentDone) {
          throw new IllegalStateException(key + ": started while " + (closed ? "closed" : "a start is in progress"));
        }
        record("start " + key);
        starts++;
        currentDone = false;
        Request r = starter.get();
        current = r;
        return new Request() {
          @Override
          public boolean test() {
            boolean done = r.test();
            if (done) {
              currentDone = true;
            }
            return done;
          }

          @Override
          public void await() {
            r.await();
            currentDone = true;
          }
        };
      }

      @Override
      public void close() {
        if (!currentDone) {
          throw new IllegalStateException(key + ": closed while a start is in progress");
        }
        closed = true;
      }
    }
  }

  /** Runs every rank with a {@link Recording} communicator, then checks every rank logged the same calls. */
  static Map<Integer, Recording> ranks(int n, StreamOrderedCollectivesTest.RankBody body) throws Exception {
    Map<Integer, Recording> byRank = new ConcurrentHashMap<>();
    StreamOrderedCollectivesTest.ranks(n, comm -> {
      Recording r = new Recording(comm);
      byRank.put(comm.rank(), r);
      body.run(r);
    });
    List<String> first = byRank.get(0).log();
    for (int r = 1; r < n; r++) {
      assertEquals(first, byRank.get(r).log(), "rank " + r + " made other collective calls than rank 0 (MPI would "
          + "deadlock on a persistent start matched with a non-blocking collective)");
    }
    return byRank;
  }

  static long count(List<String> log, String prefix) {
    return log.stream().filter(s -> s.startsWith(prefix)).count();
  }

  /**
   * A repeated all-reduce and broadcast on one queue, with each rank's reads late by a random delay: the first
   * use is non-blocking, the second prepares one persistent request per signature, every later one starts it;
   * the results are right every round (the persistent buffers are reused), and closing the messenger frees
   * the requests.
   */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void aRepeatedCollectiveInitsOnceAndStartsEveryLaterTime(int n) throws Exception {
    int rounds = 6;
    Map<Integer, Recording> byRank = ranks(n, comm -> {
      Random random = new Random(comm.rank() * 131L + n);
      Rank me = new Rank(comm, Duration.ofSeconds(30));
      try (StreamOrderedMessages ignored = me.messages) {
        for (int round = 0; round < rounds; round++) {
          List<CompletableFuture<Void>> futures = new ArrayList<>();
          List<FakeBuffer> sums = new ArrayList<>();
          List<FakeBuffer> bcasts = new ArrayList<>();
          for (int k = 0; k < 3; k++) { // several in flight at once: the later ones wait for the entry
            FakeBuffer b = values(comm.rank(), 4, Communicator.Datatype.DOUBLE);
            b.data.putDouble(0, b.data.getDouble(0) * (round + 1));
            sums.add(b);
            futures.add(me.allReduce(b, 4, Communicator.Datatype.DOUBLE, Communicator.ReduceOp.SUM, millis(random, 5)));
            FakeBuffer c = ints(comm.rank() == 1 ? 1000 * round + k : -1, 7);
            bcasts.add(c);
            futures.add(me.broadcast(c, 1, millis(random, 5)));
          }
          CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
          for (int k = 0; k < 3; k++) {
            assertEquals(expected(n, 0, Communicator.ReduceOp.SUM) * (round + 1),
                valueAt(sums.get(k), 0, Communicator.Datatype.DOUBLE), 1e-9, "round " + round + " #" + k);
            for (int i = 1; i < 4; i++) {
              assertEquals(expected(n, i, Communicator.ReduceOp.SUM), valueAt(sums.get(k), i, Communicator.Datatype.DOUBLE),
                  1e-9, "round " + round + " #" + k + " [" + i + "]");
            }
            assertEquals(1000 * round + k, bcasts.get(k).data.getInt(0), "round " + round + " #" + k);
            assertEquals(7, bcasts.get(k).data.getInt(4));
          }
        }
        assertEquals(2L * (3 * rounds - 1), me.messages.persistentStarts());
      }
    });
    for (Recording r : byRank.values()) {
      List<String> log = r.log();
      assertEquals(1, count(log, "init allreduce 4 DOUBLE SUM"), log.toString());
      assertEquals(1, count(log, "init bcast 16 root 1"), log.toString());
      assertEquals(3 * rounds - 1, count(log, "start allreduce"), log.toString());
      assertEquals(3 * rounds - 1, count(log, "start bcast"), log.toString());
      assertEquals(1, count(log, "iallreduce 4 DOUBLE"), "only the first use is non-blocking");
      assertEquals(1, count(log, "ibcast"), "only the first use is non-blocking");
      assertEquals(2, r.requests().size());
      for (Recording.Persistent p : r.requests()) {
        assertTrue(p.closed, p.key + " was not freed when the messenger closed");
      }
    }
  }

  /**
   * Two queues per rank, and each rank puts the same sequence of collectives on its queues differently (rank 0
   * puts them all on the first, rank r > 0 the i-th on queue (i + r) % 2), with random delays: a decision kept per queue would make one rank init
   * where another starts or calls the non-blocking collective; kept per communicator in ticket order, every
   * rank makes the same calls (checked by {@link #ranks}), and the results are right.
   */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void everyRankDecidesTheSameWhateverQueueItUses(int n) throws Exception {
    Map<Integer, Recording> byRank = ranks(n, comm -> {
      Random random = new Random(comm.rank() * 17L + n);
      Rank a = new Rank(comm, Duration.ofSeconds(30));
      Rank b = new Rank(comm, Duration.ofSeconds(30));
      try (StreamOrderedMessages x = a.messages; StreamOrderedMessages y = b.messages) {
        List<CompletableFuture<Void>> futures = new ArrayList<>();
        List<FakeBuffer> buffers = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
          Rank on = comm.rank() == 0 || (i + comm.rank()) % 2 == 0 ? a : b;
          Communicator.ReduceOp op = i % 3 == 0 ? Communicator.ReduceOp.MAX : Communicator.ReduceOp.SUM;
          FakeBuffer v = values(comm.rank(), 3, Communicator.Datatype.LONG);
          buffers.add(v);
          futures.add(on.allReduce(v, 3, Communicator.Datatype.LONG, op, millis(random, 8)));
        }
        CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
        for (int i = 0; i < 12; i++) {
          Communicator.ReduceOp op = i % 3 == 0 ? Communicator.ReduceOp.MAX : Communicator.ReduceOp.SUM;
          for (int j = 0; j < 3; j++) {
            assertEquals(expected(n, j, op), valueAt(buffers.get(i), j, Communicator.Datatype.LONG), 1e-9,
                "#" + i + " [" + j + "]");
          }
        }
        assertEquals(10, a.messages.persistentStarts() + b.messages.persistentStarts());
      }
    });
    for (Recording r : byRank.values()) {
      assertEquals(2, count(r.log(), "init "), r.log().toString());
      for (Recording.Persistent p : r.requests()) {
        assertTrue(p.closed, p.key + " was not freed when the last messenger closed");
      }
    }
  }

  /**
   * Where the communicator has none, every collective is non-blocking: the in-process one says exactly
   * {@link Communicator#NO_PERSISTENT_COLLECTIVES}; mpi.jar's says more after it ("none: ... (mpi.jar has no
   * persistent collectives)"), and its inits throw, which would fail the second use of a signature.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void withoutPersistentCollectivesEveryCollectiveIsNonBlocking(boolean saysMore) throws Exception {
    StreamOrderedCollectivesTest.ranks(2, inProcess -> {
      assertEquals(Communicator.NO_PERSISTENT_COLLECTIVES, inProcess.persistentCollectives());
      Communicator comm = !saysMore ? inProcess : new ForwardingCommunicator(inProcess) {
        @Override
        public String persistentCollectives() {
          return NO_PERSISTENT_COLLECTIVES + " (mpi.jar has no persistent collectives)";
        }

        @Override
        public PersistentRequest allReduceInit(ByteBuffer send, ByteBuffer receive, int count, Datatype type,
            ReduceOp op) {
          throw new UnsupportedOperationException("mpi.jar has no persistent collectives");
        }
      };
      Rank me = new Rank(comm, Duration.ofSeconds(30));
      try (StreamOrderedMessages ignored = me.messages) {
        for (int i = 0; i < 4; i++) {
          FakeBuffer v = ints(comm.rank() + 1);
          me.allReduce(v, 1, Communicator.Datatype.INT, Communicator.ReduceOp.SUM, 0).get(30, TimeUnit.SECONDS);
          assertEquals(3, v.data.getInt(0));
        }
        assertEquals(0, me.messages.persistentStarts());
      }
    });
  }
}
