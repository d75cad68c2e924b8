package org.mpibuild.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.mpibuild.spi.Communicator;

/** The in-process communicator that the core's tests use is held to the same contract as the real bindings. */
class InProcessContractTest {
  /** Runs the contract on every rank of {@code world}, one thread each; returns each rank's failure or null. */
  static List<Throwable> check(int size, InProcessCommunicator.World world) throws Exception {
    return onEveryRank(world, size, (rank, c) -> CommunicatorContract.check(c));
  }

  static void assertEveryRankPassed(List<Throwable> failures) {
    for (Throwable t : failures) {
      if (t != null) {
        throw new AssertionError("a rank failed the contract: " + t, t);
      }
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 3, 4})
  void theInProcessCommunicatorKeepsTheContract(int size) throws Exception {
    assertEveryRankPassed(check(size, new InProcessCommunicator.World(size, 60_000)));
  }

  @Test
  void onTwoNodes() throws Exception {
    assertEveryRankPassed(check(5, new InProcessCommunicator.World(5, 60_000, new int[] {0, 0, 1, 1, 1})));
  }

  @Test
  void aViolationNamesTheRankAndTheMethod() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 60_000);
    List<Throwable> failures = new ArrayList<>();
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      List<Future<?>> ranks = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        // A communicator that says every rank is rank 0.
        Communicator liar = new org.mpibuild.spi.ForwardingCommunicator(world.rank(r)) {
          @Override
          public int rank() {
            return 0;
          }
        };
        ranks.add(threads.submit(() -> {
          CommunicatorContract.check(liar);
          return null;
        }));
      }
      for (Future<?> f : ranks) {
        try {
          f.get(60, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
          failures.add(e.getCause());
        }
      }
    } finally {
      threads.shutdownNow();
    }
    assertEquals(2, failures.size(), "both ranks fail");
    for (Throwable t : failures) {
      assertTrue(t instanceof AssertionError && t.getMessage().startsWith("rank 0 of 2, rank(): slot 1 of an all-gather "
          + "holds rank 0"), String.valueOf(t));
    }
  }

  /** Runs {@code body} on every rank of {@code world}; returns each rank's failure, or null. */
  static List<Throwable> onEveryRank(InProcessCommunicator.World world, int size,
      java.util.function.BiConsumer<Integer, Communicator> body) throws Exception {
    ExecutorService threads = Executors.newFixedThreadPool(size);
    try {
      List<Future<?>> ranks = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        int rank = r;
        Communicator c = world.rank(r);
        ranks.add(threads.submit(() -> {
          body.accept(rank, c);
          return null;
        }));
      }
      List<Throwable> failures = new ArrayList<>();
      for (Future<?> f : ranks) {
        try {
          f.get(60, TimeUnit.SECONDS);
          failures.add(null);
        } catch (java.util.concurrent.ExecutionException e) {
          failures.add(e.getCause());
        }
      }
      return failures;
    } finally {
      threads.shutdownNow();
    }
  }

  @Test
  void ranksThatCallDifferentCollectivesFailWithBothNames() throws Exception {
    List<Throwable> failures = onEveryRank(new InProcessCommunicator.World(3, 60_000), 3, (rank, c) -> {
      if (rank == 2) {
        c.allGather(new byte[1]);
      } else {
        c.allReduceMax(new int[] {rank});
      }
    });
    for (Throwable t : failures) {
      assertTrue(t != null && t.getMessage().equals("mismatched collectives: rank 0 called allReduceMax, rank 2 called "
          + "allGather (protocol bug)"), String.valueOf(t));
    }
  }

  @Test
  void aRankThatNeverComesFailsTheOthersAtTheDeadline() throws Exception {
    long start = System.nanoTime();
    List<Throwable> failures = onEveryRank(new InProcessCommunicator.World(3, 300), 3, (rank, c) -> {
      if (rank != 1) {
        c.allReduceMax(new int[] {rank});
      }
    });
    assertEquals(null, failures.get(1));
    for (int r : new int[] {0, 2}) {
      Throwable t = failures.get(r);
      assertTrue(t != null && t.getMessage().startsWith("collective did not complete within 300 ms"), String.valueOf(t));
    }
    assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(30), "failed at the deadline, not later");
  }

  @Test
  void nonBlockingCollectivesMatchBlockingOnesByOrderWithNoThreadOfTheirOwn() throws Exception {
    int before = Thread.activeCount();
    int[] threadsDuring = new int[1];
    List<Throwable> failures = onEveryRank(new InProcessCommunicator.World(64, 60_000), 64, (rank, c) -> {
      int[] result = new int[1];
      // Rank 0 starts a non-blocking all-reduce and then a blocking one; the others only block, twice.
      Communicator.Request first = rank == 0 ? c.iAllReduceMax(new int[] {rank}, result) : null;
      int[] firstBlocking = rank == 0 ? null : c.allReduceMax(new int[] {rank});
      int[] second = c.allReduceMax(new int[] {-rank});
      if (rank == 0) {
        threadsDuring[0] = Thread.activeCount();
        first.await();
        firstBlocking = result;
      }
      assertEquals(63, firstBlocking[0], "the first all-reduce, on rank " + rank);
      assertEquals(0, second[0], "the second all-reduce, on rank " + rank);
    });
    assertEveryRankPassed(failures);
    assertTrue(threadsDuring[0] <= before + 64 + 4, "no thread per rank for collectives: " + threadsDuring[0]
        + " threads with 64 ranks, " + before + " before");
  }
}
