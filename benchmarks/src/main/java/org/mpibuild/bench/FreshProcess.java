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
 * {@code make bench-fresh}: a job as its user runs it, new processes each time. The main comparison runs its
 * repetitions in long-lived ranks, where PoCL and LLVM started long ago; a user's job starts them at its first
 * build in every rank, and so does mpi-build's compile process at every compile. Here every repetition starts a
 * new job for naive (every rank: its own context, the compile, the first launches) and one for mpi-build (an empty
 * cache that the build fills, the request with its launch shapes, the first launches), each rank with an empty PoCL
 * cache of its own, paired, the order alternating. At one rank the job is one JVM in local mode, without mpirun;
 * at N ranks it is {@code bin/mpi-build run -np N}. Every rank of both starts its logging, and MPI where there is
 * MPI, before its work, as an application does. Per job: its wall time from its start to its exit (close included:
 * mpi-build's cache write), its time to ready kernels, the latest rank's, from that rank's JVM start, and its tail
 * (the wall time less the time to ready: what a program that exits at once waits for after its kernels).
 */
final class FreshProcess {
  private FreshProcess() {}

  /**
   * One rank: {@code FreshProcess naive|mpi-build PROGRAM [world]}; prints {@code FRESH ready_ms=... cpu_ms=...}
   * once it has closed everything: its time to ready kernels from its JVM's start, and the CPU time of the rank's
   * process, of the processes it waited for (mpi-build's compile process) and of those still running (a compile
   * process started ahead, waiting for a compile this job will not ask for). With {@code world} the rank starts
   * MPI first (mpi.jar), and mpi-build builds on the world communicator.
   */
  public static void main(String[] args) throws Exception {
    String mode = args[0];
    String program = args[1];
    boolean world = args.length > 2 && args[2].equals("world");
    // The program's own start, the same in both modes: its logging (the examples' logback.xml is on this class
    // path; parsing it costs a new JVM about 0.3-0.5 s, which an application pays at its start whether it uses
    // mpi-build or not) and MPI
    org.slf4j.LoggerFactory.getLogger(FreshProcess.class).debug("starting {}", mode);
    if (world) {
      mpi.MPI.Init(args);
    }
    KernelSource request = Bench.variant(program, "fresh " + mode, mode.equals("mpi-build"));
    long ready;
    if (mode.equals("naive")) {
      try (Ocl cl = Ocl.open()) {
        cl_program p = cl.build(request.source(), request.options());
        Launch.everyKernel(cl, cl.kernels(p, request.kernelNames()), program);
        ready = sinceStart();
      }
    } else {
      org.mpibuild.MpiBuildBuilder builder = MpiBuild.builder().backend(org.mpibuild.programs.Scenarios.openCl());
      try (MpiBuild mpiBuild = (world ? builder : builder.local()).build();
          Kernel k = mpiBuild.mpiBuildKernel(request, 0)) {
        Launch.everyKernel(k.as(OpenClKernel.class), program);
        ready = sinceStart();
      }
    }
    // one write: under mpirun, a line printed in pieces may be joined with another rank's
    System.out.print("FRESH ready_ms=" + ready + " cpu_ms=" + Cpu.nanosWithLiveChildren() / 1_000_000
        + System.lineSeparator());
    System.out.flush();
    if (world) {
      mpi.MPI.Finalize();
    }
  }

  private static long sinceStart() {
    return System.currentTimeMillis() - ManagementFactory.getRuntimeMXBean().getStartTime();
  }

  /** The comparison at each job size of {@code ranks}: {@code reps} pairs, medians, paired ratios, a line each. */
  static void run(Path repo, Path out, String program, int reps, List<Integer> ranks) throws Exception {
    StringBuilder lines = new StringBuilder();
    for (int n : ranks) {
      String line = job(repo, out, program, reps, n);
      System.out.println(line);
      lines.append(line).append('\n');
    }
    Files.writeString(out.resolve("fresh.md"), lines);
  }

  private static String job(Path repo, Path out, String program, int reps, int n) throws Exception {
    Map<String, List<Double>> wall = Map.of("naive", new ArrayList<>(), "mpi-build", new ArrayList<>());
    Map<String, List<Double>> ready = Map.of("naive", new ArrayList<>(), "mpi-build", new ArrayList<>());
    Map<String, List<Double>> cpu = Map.of("naive", new ArrayList<>(), "mpi-build", new ArrayList<>());
    // the job's end after its kernels were ready (close included): what a program that exits at once waits for
    Map<String, List<Double>> tail = Map.of("naive", new ArrayList<>(), "mpi-build", new ArrayList<>());
    for (int rep = -1; rep < reps; rep++) {
      List<String> order = Math.floorMod(rep, 2) == 0 ? List.of("naive", "mpi-build") : List.of("mpi-build", "naive");
      for (String mode : order) {
        Path dir = Files.createTempDirectory(out, "fresh-");
        try {
          long t0 = System.nanoTime();
          String output = BenchReport.run(command(repo, mode, program, n), environment(dir, n), 600);
          double ms = (System.nanoTime() - t0) / 1e6;
          Marks m = marks(output, n, mode);
          System.out.printf(Locale.ROOT, "bench fresh n=%d %s rep %d: job %.0f ms, ready %.0f ms, %.0f cpu-ms%s%n", n,
              mode, rep, ms, m.readyMs(), m.cpuMs(), rep < 0 ? " (warm-up, dropped)" : "");
          if (rep >= 0) {
            wall.get(mode).add(ms);
            ready.get(mode).add(m.readyMs());
            cpu.get(mode).add(m.cpuMs());
            tail.get(mode).add(ms - m.readyMs());
          }
        } finally {
          BenchReport.deleteTree(dir);
        }
      }
    }
    return String.format(Locale.ROOT, "bench: fresh program=%s n=%d reps=%d naive_process_ms=%.0f "
        + "mpibuild_process_ms=%.0f mpibuild_over_naive_process=%s naive_ready_ms=%.0f mpibuild_ready_ms=%.0f "
        + "mpibuild_over_naive_ready=%s naive_cpu_ms=%.0f mpibuild_cpu_ms=%.0f cpu_naive_over_mpibuild=%s "
        + "naive_tail_ms=%.0f mpibuild_tail_ms=%.0f", program,
        n, reps, Stats.median(wall.get("naive")), Stats.median(wall.get("mpi-build")),
        cell(Stats.ratios(wall.get("mpi-build"), wall.get("naive"))), Stats.median(ready.get("naive")),
        Stats.median(ready.get("mpi-build")), cell(Stats.ratios(ready.get("mpi-build"), ready.get("naive"))),
        Stats.median(cpu.get("naive")), Stats.median(cpu.get("mpi-build")),
        cell(Stats.ratios(cpu.get("naive"), cpu.get("mpi-build"))), Stats.median(tail.get("naive")),
        Stats.median(tail.get("mpi-build")));
  }

  /** One JVM for a job of one rank; {@code bin/mpi-build run} for more. */
  private static List<String> command(Path repo, String mode, String program, int n) {
    String cp = System.getProperty("java.class.path");
    if (n == 1) {
      return List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp", cp,
          FreshProcess.class.getName(), mode, program);
    }
    return List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", Integer.toString(n), "-cp", cp,
        FreshProcess.class.getName(), mode, program, "world");
  }

  /** An empty cache and empty PoCL caches: one PoCL cache per rank ({@code bin/mpi-build-rank} makes them). */
  private static Map<String, String> environment(Path dir, int n) {
    Path jsig = Path.of(System.getProperty("java.home"), "lib", "libjsig.so");
    Map<String, String> env = new java.util.HashMap<>(Map.of("MPI_BUILD_BENCH_RUN", "fresh-" + System.nanoTime(),
        "MPI_BUILD_CACHE_DIR", dir.resolve("cache").toString(), "MPI_BUILD_CACHE", "on",
        "MPI_BUILD_LOG_LEVEL", "WARN"));
    if (n == 1) {
      env.put("POCL_CACHE_DIR", dir.resolve("pocl").toString());
      env.put("LD_PRELOAD", Files.isRegularFile(jsig) ? jsig.toString() : "");
    } else {
      env.put("MPI_BUILD_POCL_CACHE_ROOT", dir.resolve("pocl").toString());
    }
    return env;
  }

  /** A job's marks: its latest rank's time to ready kernels, and the CPU time of all its ranks. */
  record Marks(double readyMs, double cpuMs) {}

  /**
   * A job's marks from its {@code n} ranks' {@code FRESH ready_ms=... cpu_ms=...}, found anywhere in its output
   * (mpirun may join two ranks' lines into one).
   */
  static Marks marks(String output, int n, String mode) {
    List<java.util.regex.MatchResult> found = MARK.matcher(output).results().toList();
    if (found.size() != n) {
      throw new IllegalStateException(mode + " printed " + found.size() + " FRESH lines, not " + n + ":\n" + output);
    }
    return new Marks(found.stream().mapToDouble(m -> Double.parseDouble(m.group(1))).max().orElseThrow(),
        found.stream().mapToDouble(m -> Double.parseDouble(m.group(2))).sum());
  }

  private static final java.util.regex.Pattern MARK =
      java.util.regex.Pattern.compile("FRESH ready_ms=(\\d+) cpu_ms=(\\d+)");

  static String cell(List<Double> ratios) {
    Stats.Interval i = Stats.intervalOrRange(ratios);
    return String.format(Locale.ROOT, "%.3f[%.3f-%.3f]", Stats.median(ratios), i.low(), i.high());
  }
}
