package org.mpibuild.internal.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.testkit.FakeBackend;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * Scale on paper: the protocol with 256 and 1,024 in-process ranks. Each rank's collective calls and the
 * bytes it contributes to them are counted, from the opening of the library to the end of the build. A
 * binomial or pipelined broadcast sends O(log N) MPI messages per rank for each call, so the calls a rank
 * makes must not depend on N at all; and only the roots touch the shared cache directory, so its operations
 * must not depend on N either. (The deadline's arrival messages, N - 1 one-byte receives and sends at rank 0 per call,
 * are point-to-point, so they are not counted here; docs/scale.md counts them.)
 */
class ScaleTest {
  static final int[] SIZES = {256, 1024};

  /** What one job did: per-rank calls and bytes (the largest over ranks), compiles, shared-cache operations. */
  record Job(int ranks, long callsPerRank, long bytesPerRank, long compiles, long compilingRanks, long cacheOperations) {}

  interface Work {
    List<Kernel> build(int rank, MpiBuild b);
  }

  static Job job(int n, Path cache, Work work, boolean eightTargets) throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(n, 600_000);
    List<FakeBackend> backends = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      FakeBackend b = new FakeBackend();
      if (eightTargets) {
        b.target = "device-" + (r % 8);
        b.targetInBinary = true;
      }
      backends.add(b);
    }
    long[] ops = new long[1];
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<long[]>> futures = new ArrayList<>();
      for (int r = 0; r < n; r++) {
        int rank = r;
        futures.add(pool.submit(() -> {
          try (MpiBuild b = MpiBuild.builder().communicator(world.rank(rank)).backend(backends.get(rank))
              .cacheDirectory(cache).set("MPI_BUILD_SPIN_US", "0").build()) {
            List<Kernel> kernels = work.build(rank, b);
            long[] mine = count(world, rank);
            kernels.forEach(Kernel::close);
            long fileOps = b.statistics().cacheFileOperations(); // collective: after the count
            if (rank == 0) {
              ops[0] = fileOps;
            }
            return mine;
          }
        }));
      }
      long calls = 0;
      long bytes = 0;
      for (Future<long[]> f : futures) {
        long[] c = f.get(10, TimeUnit.MINUTES);
        calls = Math.max(calls, c[0]);
        bytes = Math.max(bytes, c[1]);
      }
      long compiles = backends.stream().mapToLong(b -> b.compiles.get()).sum();
      long compiling = backends.stream().filter(b -> b.compiles.get() > 0).count();
      return new Job(n, calls, bytes, compiles, compiling, ops[0]);
    } finally {
      pool.shutdownNow();
    }
  }

  /** This rank's collective calls so far, and the bytes it put into them. */
  static long[] count(InProcessCommunicator.World world, int rank) {
    long calls = 0;
    long bytes = 0;
    for (InProcessCommunicator.Call c : world.calls()) {
      if (c.rank() == rank) {
        calls++;
        bytes += c.bytes();
      }
    }
    return new long[] {calls, bytes};
  }

  static List<KernelSource> requests(int k) {
    List<KernelSource> out = new ArrayList<>();
    for (int i = 0; i < k; i++) {
      out.add(KernelSource.of("__kernel void k" + i + "() {}").withKernels("k" + i));
    }
    return out;
  }

  static Map<Integer, Job> atEverySize(Path tmp, String name, Work work, boolean eightTargets) throws Exception {
    Map<Integer, Job> out = new java.util.TreeMap<>();
    for (int n : SIZES) {
      Job j = job(n, tmp.resolve(name + "-" + n), work, eightTargets);
      System.out.println("scale: " + name + ": " + j);
      out.put(n, j);
    }
    return out;
  }

  /**
   * Per-rank calls and bytes equal at both sizes; shared-directory operations at most {@code maxOps} at both
   * (several roots write at once when there are several targets, and their lock retries vary by a few).
   */
  static void perRankWorkDoesNotGrow(Map<Integer, Job> jobs, long maxOps) {
    Job small = jobs.get(SIZES[0]);
    Job large = jobs.get(SIZES[1]);
    assertEquals(small.callsPerRank(), large.callsPerRank(), "collective calls per rank grew with N: " + jobs);
    assertEquals(small.bytesPerRank(), large.bytesPerRank(), "bytes per rank grew with N: " + jobs);
    assertTrue(small.cacheOperations() > 0, "the shared cache was used: " + jobs);
    for (Job j : jobs.values()) {
      assertTrue(j.cacheOperations() <= maxOps, "shared-directory operations beyond " + maxOps + ": " + jobs);
    }
  }

  /** The shared-directory operations of one cold build by one root, as the protocol does it. */
  static final long ONE_BUILD_OPS = 11;

  @Test
  void aSingleBuild(@TempDir Path tmp) throws Exception {
    KernelSource request = KernelSource.of("__kernel void k() {}").withKernels("k");
    Map<Integer, Job> jobs = atEverySize(tmp, "single build", (rank, b) -> List.of(b.mpiBuildKernel(request, 0)), false);
    perRankWorkDoesNotGrow(jobs, 2 * ONE_BUILD_OPS);
    assertEquals(jobs.get(SIZES[0]).cacheOperations(), jobs.get(SIZES[1]).cacheOperations(), "one root: " + jobs);
    jobs.values().forEach(j -> assertEquals(1, j.compiles(), "one compile in the job: " + j));
  }

  @Test
  void aBatchOf64SpreadOverTheRanks(@TempDir Path tmp) throws Exception {
    List<KernelSource> requests = requests(64);
    Map<Integer, Job> jobs = atEverySize(tmp, "batch of 64", (rank, b) -> b.mpiBuildKernels(requests), false);
    perRankWorkDoesNotGrow(jobs, 64 * 2 * ONE_BUILD_OPS * 4);
    jobs.values().forEach(j -> {
      assertEquals(64, j.compiles(), "each request compiled once: " + j);
      assertEquals(64, j.compilingRanks(), "spread over 64 ranks: " + j);
    });
  }

  @Test
  void eightTargets(@TempDir Path tmp) throws Exception {
    KernelSource request = KernelSource.of("__kernel void k() {}").withKernels("k");
    Map<Integer, Job> jobs = atEverySize(tmp, "8 targets", (rank, b) -> List.of(b.mpiBuildKernel(request, 0)), true);
    perRankWorkDoesNotGrow(jobs, 8 * 2 * ONE_BUILD_OPS * 4);
    jobs.values().forEach(j -> assertEquals(8, j.compiles(), "one compile per target: " + j));
  }
}
