package org.mpibuild.internal.agreement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.MpiBuild;
import org.mpibuild.MpiBuildBuilder;
import org.mpibuild.RequestMismatchException;
import org.mpibuild.testkit.FakeBackend;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * Settings that decide which collectives run must be equal on every rank: a difference ends in the same
 * RequestMismatchException everywhere, naming the setting and the ranks, instead of a hang.
 */
public class SettingsAgreementTest {
  interface Configure {
    void on(int rank, MpiBuildBuilder b);
  }

  static List<Object> open(int size, Configure configure) throws Exception {
    return onRanks(new InProcessCommunicator.World(size, 10_000), configure, (rank, m) -> "opened");
  }

  public interface Body {
    Object run(int rank, MpiBuild build) throws Exception;
  }

  /**
   * Opens an instance on every rank of {@code world} with these settings and runs {@code body}; returns each
   * rank's value or exception.
   */
  public static List<Object> onRanks(InProcessCommunicator.World world, java.util.Map<String, String> settings, Body body)
      throws Exception {
    return onRanks(world, (rank, b) -> settings.forEach(b::set), body);
  }

  /**
   * Opens an instance on every rank of {@code world}, configured by {@code configure}, and runs {@code body};
   * returns each rank's value or exception.
   */
  public static List<Object> onRanks(InProcessCommunicator.World world, Configure configure, Body body) throws Exception {
    int size = world.rank(0).size();
    ExecutorService pool = Executors.newFixedThreadPool(size);
    try {
      List<Future<Object>> futures = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        int rank = r;
        futures.add(pool.submit(() -> {
          MpiBuildBuilder b = MpiBuild.builder().communicator(world.rank(rank)).backend(new FakeBackend()).noCache();
          configure.on(rank, b);
          try (MpiBuild m = b.build()) {
            return body.run(rank, m);
          }
        }));
      }
      List<Object> out = new ArrayList<>();
      for (Future<Object> f : futures) {
        try {
          out.add(f.get(30, TimeUnit.SECONDS));
        } catch (ExecutionException e) {
          out.add(e.getCause());
        }
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  static void sameMismatchEverywhere(List<Object> results, String setting, int rank) {
    String first = null;
    for (Object o : results) {
      RequestMismatchException e = assertInstanceOf(RequestMismatchException.class, o);
      assertTrue(e.getMessage().contains(setting) && e.getMessage().contains("rank " + rank + " differs"), e.getMessage());
      assertEquals(List.of(setting), e.differingRanks().get(rank));
      first = first == null ? e.getMessage() : first;
      assertEquals(first, e.getMessage(), "the same explanation on every rank");
    }
  }

  @Test
  void batchRanksDifferingOnOneRankFailEveryRankAlike() throws Exception {
    sameMismatchEverywhere(open(3, (rank, b) -> b.batchRanks(rank == 2 ? 1 : 0)), "MPI_BUILD_BATCH_RANKS", 2);
  }

  @Test
  void aNodeCacheOnOneRankOnlyFailsEveryRankAlike(@TempDir Path tmp) throws Exception {
    sameMismatchEverywhere(open(3, (rank, b) -> {
      b.cacheDirectory(tmp.resolve("shared"));
      if (rank == 1) {
        b.set("MPI_BUILD_NODE_CACHE_DIR", tmp.resolve("node").toString());
      }
    }), "MPI_BUILD_NODE_CACHE_DIR", 1);
  }

  /**
   * The collective deadline is agreed at opening: {@code off} on one rank is the same clear error on every
   * rank, quickly (it once made that rank run other collectives than the rest, and no call ever matched).
   */
  @Test
  void aCollectiveDeadlineOffOnOneRankFailsEveryRankAlike() throws Exception {
    long t0 = System.nanoTime();
    List<Object> results = open(3, (rank, b) -> b.set("MPI_BUILD_COLLECTIVE_TIMEOUT", rank == 1 ? "off" : "3"));
    sameMismatchEverywhere(results, "MPI_BUILD_COLLECTIVE_TIMEOUT", 1);
    String message = ((Exception) results.get(0)).getMessage();
    assertTrue(message.contains("MPI_BUILD_COLLECTIVE_TIMEOUT=off") && message.contains("MPI_BUILD_COLLECTIVE_TIMEOUT=3s"),
        message);
    assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(3), "an error, not a wait for the deadline");
  }

  @Test
  void equalSettingsOpen() throws Exception {
    assertEquals(List.of("opened", "opened"), open(2, (rank, b) -> b.batchRanks(1)));
  }

  @Test
  void aRankThatNeverEntersEndsTheCallOfTheOthersAtTheDeadline() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 20_000);
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try {
      List<Future<Long>> futures = new ArrayList<>();
      for (int r = 0; r < 3; r++) {
        int rank = r;
        futures.add(pool.submit(() -> {
          try (MpiBuild m = MpiBuild.builder().communicator(world.rank(rank)).backend(new FakeBackend()).noCache()
              .set("MPI_BUILD_COLLECTIVE_TIMEOUT", "1").build()) {
            if (rank == 2) {
              Thread.sleep(8_000); // still computing
            }
            long t0 = System.nanoTime();
            try {
              m.mpiBuildKernel("__kernel void k() {}", 0).close();
            } catch (IllegalStateException e) {
              // rank 0 names the absent rank (the in-process communicator carries the arrival messages), and its
              // abort ends the wait of rank 1, which saw rank 0 arrive
              String expected = "ranks [2] of 3 did not enter the build of";
              assertTrue(e.getMessage().contains(expected) && e.getMessage().contains("MPI_BUILD_COLLECTIVE_TIMEOUT"),
                  e.getMessage());
              return (System.nanoTime() - t0) / 1_000_000;
            }
            return -1L;
          }
        }));
      }
      for (int r = 0; r < 2; r++) {
        long ms = futures.get(r).get(30, TimeUnit.SECONDS);
        assertTrue(ms >= 1000 && ms < 7000, "rank " + r + " ended after " + ms + " ms (deadline 1 s, grace 5 s)");
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
