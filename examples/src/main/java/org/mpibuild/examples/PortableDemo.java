package org.mpibuild.examples;

import java.util.Locale;
import org.mpibuild.BuildStats;
import org.mpibuild.JobStatistics;
import org.mpibuild.Kernel;
import org.mpibuild.MpiBuild;
import org.mpibuild.opencl.OpenClKernel;

/**
 * The demo job through the library's API alone, for machines without Open MPI's {@code mpi.jar}: MPICH,
 * Cray MPICH, Intel MPI or Open MPI 6, on the FFM binding (Java 22+). The library initializes MPI and
 * finalizes it at exit. Rank 0 compiles; every rank loads the binary, runs saxpy on its own data, checks it
 * and prints its row; rank 0 prints the job's summary, reduced over every rank. A rank whose result is wrong
 * exits 1. {@code bin/mpi-build demo} runs it where no {@code mpi.jar} is installed.
 *
 * <pre>mpiexec -n 4 bin/mpi-build-rank -cp ... org.mpibuild.examples.PortableDemo</pre>
 */
public final class PortableDemo {
  private static final int ROOT = 0;
  private static final int N = 1 << 16;

  private PortableDemo() {}

  public static void main(String[] args) {
    boolean verified;
    try (MpiBuild mpiBuild = MpiBuild.builder().backend("opencl").build()) {
      int rank = mpiBuild.rank();
      try (Kernel kernel = mpiBuild.mpiBuildKernel(Saxpy.REQUEST, ROOT)) {
        BuildStats s = kernel.stats();
        verified = Saxpy.runAndVerify(kernel.as(OpenClKernel.class), rank, N);
        // One write per line, so that the ranks' lines do not interleave.
        System.out.println(String.format(Locale.ROOT, "rank %d: %s, obtain %.1f ms, wait %.1f ms, broadcast %.2f ms, "
            + "load %.2f ms, %d bytes, verified %s", rank, s.rank() == s.root() ? "root" : "receiver", s.obtainNanos() / 1e6,
            s.waitNanos() / 1e6, s.broadcastNanos() / 1e6, s.loadNanos() / 1e6, s.binaryBytes(),
            verified ? "yes" : "NO"));
      }
      JobStatistics job = mpiBuild.statistics();
      if (rank == ROOT) {
        System.out.printf(Locale.ROOT, "summary: ranks=%d compiles=%d builds=%d backend=%s cache_hits=%d binding=%s%n",
            job.ranks(), job.compiles(), job.builds(), mpiBuild.backend(), job.cacheHits(), mpiBuild.communicator());
      }
    }
    System.exit(verified ? 0 : 1);
  }
}
