package org.mpibuild.bench;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jocl.cl_program;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.opencl.OpenClKernel;

/**
 * {@code make bench-fresh}: a job of one rank as its user runs it, a new process each time. The main comparison
 * runs its repetitions in long-lived ranks, where PoCL and LLVM started long ago; a user's one-rank job starts
 * them at its first build, and so does mpi-build's compile process at every compile. Here every repetition
 * starts a new JVM for naive (its own context, the compile, the first launches) and one for mpi-build (local
 * mode, an empty cache that the build fills, the request with its launch shapes, the first launches), each with
 * an empty PoCL cache of its own, paired, the order alternating; each process's wall time from its start to its
 * exit (close included: mpi-build's cache write) and its time to ready kernels from the JVM's start.
 */
final class FreshProcess {
  private FreshProcess() {}

  /** One process: {@code FreshProcess naive|mpi-build PROGRAM}; prints {@code FRESH ready_ms=...}. */
  public static void main(String[] args) throws Exception {
    String mode = args[0];
    String program = args[1];
    KernelSource request = Bench.variant(program, "fresh " + mode, mode.equals("mpi-build"));
    if (mode.equals("naive")) {
      try (Ocl cl = Ocl.open()) {
        cl_program p = cl.build(request.source(), request.options());
        Launch.everyKernel(cl, cl.kernels(p, request.kernelNames()), program);
        ready();
      }
    } else {
      try (MpiBuild mpiBuild = MpiBuild.builder().local().backend(org.mpibuild.programs.Scenarios.openCl()).build();
          Kernel k = mpiBuild.mpiBuildKernel(request, 0)) {
        Launch.everyKernel(k.as(OpenClKernel.class), program);
        ready();
      }
    }
  }

  private static void ready() {
    System.out.printf(Locale.ROOT, "FRESH ready_ms=%d%n",
        System.currentTimeMillis() - ManagementFactory.getRuntimeMXBean().getStartTime());
  }

  /** The comparison: {@code reps} pairs, printed as medians, paired ratios and a {@code bench: fresh} line. */
  static void run(Path out, String program, int reps) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Path jsig = Path.of(System.getProperty("java.home"), "lib", "libjsig.so");
    Map<String, List<Double>> wall = Map.of("naive", new ArrayList<>(), "mpi-build", new ArrayList<>());
    Map<String, List<Double>> ready = Map.of("naive", new ArrayList<>(), "mpi-build", new ArrayList<>());
    for (int rep = -1; rep < reps; rep++) {
      List<String> order = Math.floorMod(rep, 2) == 0 ? List.of("naive", "mpi-build") : List.of("mpi-build", "naive");
      for (String mode : order) {
        Path dir = Files.createTempDirectory(out, "fresh-");
        try {
          Map<String, String> env = Map.of("MPI_BUILD_BENCH_RUN", "fresh-" + System.nanoTime(),
              "POCL_CACHE_DIR", dir.resolve("pocl").toString(), "MPI_BUILD_CACHE_DIR", dir.resolve("cache").toString(),
              "MPI_BUILD_CACHE", "on", "MPI_BUILD_LOG_LEVEL", "WARN",
              "LD_PRELOAD", Files.isRegularFile(jsig) ? jsig.toString() : "");
          long t0 = System.nanoTime();
          String output = BenchReport.run(List.of(java, "-cp", System.getProperty("java.class.path"),
              FreshProcess.class.getName(), mode, program), env, 600);
          double ms = (System.nanoTime() - t0) / 1e6;
          double readyMs = output.lines().filter(l -> l.startsWith("FRESH ready_ms=")).findFirst()
              .map(l -> Double.parseDouble(l.substring("FRESH ready_ms=".length())))
              .orElseThrow(() -> new IllegalStateException(mode + " printed no FRESH line:\n" + output));
          System.out.printf(Locale.ROOT, "bench fresh %s rep %d: process %.0f ms, ready %.0f ms%s%n", mode, rep, ms,
              readyMs, rep < 0 ? " (warm-up, dropped)" : "");
          if (rep >= 0) {
            wall.get(mode).add(ms);
            ready.get(mode).add(readyMs);
          }
        } finally {
          BenchReport.deleteTree(dir);
        }
      }
    }
    List<Double> wallRatio = Stats.ratios(wall.get("mpi-build"), wall.get("naive"));
    List<Double> readyRatio = Stats.ratios(ready.get("mpi-build"), ready.get("naive"));
    String line = String.format(Locale.ROOT, "bench: fresh program=%s n=1 reps=%d naive_process_ms=%.0f "
        + "mpibuild_process_ms=%.0f mpibuild_over_naive_process=%s naive_ready_ms=%.0f mpibuild_ready_ms=%.0f "
        + "mpibuild_over_naive_ready=%s", program, reps, Stats.median(wall.get("naive")),
        Stats.median(wall.get("mpi-build")), cell(wallRatio), Stats.median(ready.get("naive")),
        Stats.median(ready.get("mpi-build")), cell(readyRatio));
    Files.writeString(out.resolve("fresh.md"), line + "\n");
    System.out.println(line);
  }

  static String cell(List<Double> ratios) {
    Stats.Interval i = Stats.intervalOrRange(ratios);
    return String.format(Locale.ROOT, "%.3f[%.3f-%.3f]", Stats.median(ratios), i.low(), i.high());
  }
}
