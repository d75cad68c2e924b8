package org.mpibuild.examples;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import mpi.MPI;
import mpi.MPIException;
import org.mpibuild.BuildStats;
import org.mpibuild.JobStatistics;
import org.mpibuild.Kernel;
import org.mpibuild.MpiBuild;
import org.mpibuild.opencl.OpenClKernel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The demo job: an ordinary MPI Java program that initializes MPI itself and builds one OpenCL kernel
 * collectively. Rank 0 compiles; every rank loads the binary, runs saxpy on its own data and checks it.
 * Rank 0 prints a table of every rank and a summary counted from what the ranks reported over MPI.
 *
 * <pre>mpirun -np 4 java -cp ... org.mpibuild.examples.Demo</pre>
 */
public final class Demo {
  private static final Logger log = LoggerFactory.getLogger(Demo.class);
  private static final int ROOT = 0;
  private static final int N = 1 << 16;
  /** rank, compiled, loaded, verified, compile ns, wait ns, broadcast ns, load ns, bytes, cache hit. */
  private static final int FIELDS = 10;

  private Demo() {}

  public static void main(String[] args) throws MPIException {
    MPI.Init(args);
    int rank = MPI.COMM_WORLD.getRank();
    int size = MPI.COMM_WORLD.getSize();
    long[] mine = new long[FIELDS];
    mine[0] = rank;
    String backend = "none";
    String failure = null;
    try (MpiBuild mpiBuild = MpiBuild.builder().backend("opencl").build()) {
      backend = mpiBuild.backend();
      try (Kernel kernel = mpiBuild.mpiBuildKernel(Saxpy.REQUEST, ROOT)) {
        BuildStats s = kernel.stats();
        mine[1] = s.compiled() ? 1 : 0;
        mine[2] = 1;
        mine[3] = Saxpy.runAndVerify(kernel.as(OpenClKernel.class), rank, N) ? 1 : 0;
        mine[4] = s.obtainNanos();
        mine[5] = s.waitNanos();
        mine[6] = s.broadcastNanos();
        mine[7] = s.loadNanos();
        mine[8] = s.binaryBytes();
        mine[9] = s.cacheHit() ? 1 : 0;
      }
      writeStatistics(mpiBuild.statistics(), rank);
    } catch (RuntimeException e) {
      failure = e.getMessage();
      log.error("collective build failed: {}", e.getMessage());
    }

    long[] all = new long[FIELDS * size];
    MPI.COMM_WORLD.gather(mine, FIELDS, MPI.LONG, all, FIELDS, MPI.LONG, ROOT);
    byte[] node = Arrays.copyOf(nodeName().getBytes(StandardCharsets.UTF_8), NODE_BYTES);
    byte[] nodes = new byte[NODE_BYTES * size];
    MPI.COMM_WORLD.gather(node, NODE_BYTES, MPI.BYTE, nodes, NODE_BYTES, MPI.BYTE, ROOT);
    int verified = 0;
    if (rank == ROOT) {
      verified = report(all, nodes, size, backend);
      if (failure != null) {
        System.out.println("error: " + failure);
      }
    }
    int[] ok = {rank == ROOT && verified == size ? 1 : 0};
    MPI.COMM_WORLD.bcast(ok, 1, MPI.INT, ROOT);
    MPI.Finalize();
    System.exit(ok[0] == 1 ? 0 : 1);
  }

  /** Writes the job-wide statistics as JSON to the file MPI_BUILD_STATS_JSON names, if set (root only). */
  private static void writeStatistics(JobStatistics stats, int rank) {
    String file = System.getenv("MPI_BUILD_STATS_JSON");
    if (file == null || file.isBlank() || rank != ROOT) {
      return;
    }
    try {
      Files.writeString(Path.of(file), stats.toJson() + "\n");
    } catch (IOException e) {
      log.warn("cannot write statistics to {}: {}", file, e.toString());
    }
  }

  /** The node this rank runs on: the kernel's node name (no DNS needed). */
  private static String nodeName() {
    try {
      return Files.readString(Path.of("/proc/sys/kernel/hostname")).trim();
    } catch (IOException e) {
      return System.getenv().getOrDefault("HOSTNAME", "?");
    }
  }

  private static final int NODE_BYTES = 64;

  private static int report(long[] all, byte[] nodes, int size, String backend) {
    System.out.println();
    System.out.printf(Locale.ROOT, "%5s  %-8s  %-12s  %10s  %8s  %12s  %8s  %8s  %8s%n",
        "rank", "role", "node", "obtain ms", "wait ms", "broadcast ms", "load ms", "bytes", "verified");
    int compiles = 0;
    int loaded = 0;
    int verified = 0;
    int hits = 0;
    for (int r = 0; r < size; r++) {
      int o = r * FIELDS;
      compiles += (int) all[o + 1];
      loaded += (int) all[o + 2];
      verified += (int) all[o + 3];
      hits += (int) all[o + 9];
      String node = new String(nodes, r * NODE_BYTES, NODE_BYTES, StandardCharsets.UTF_8).trim()
          .replace("\0", "");
      System.out.printf(Locale.ROOT, "%5d  %-8s  %-12s  %10.1f  %8.1f  %12.2f  %8.2f  %8d  %8s%n",
          all[o], all[o] == ROOT ? (all[o + 9] == 1 ? "root/hit" : "root") : "receiver", node, all[o + 4] / 1e6,
          all[o + 5] / 1e6, all[o + 6] / 1e6,
          all[o + 7] / 1e6, all[o + 8], all[o + 3] == 1 ? "yes" : "NO");
    }
    System.out.println();
    System.out.printf(Locale.ROOT, "summary: ranks=%d compiles=%d loaded=%d verified=%d backend=%s cache_hits=%d%n",
        size, compiles, loaded, verified, backend, hits);
    return verified;
  }
}
