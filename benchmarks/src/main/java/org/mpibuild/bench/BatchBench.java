package org.mpibuild.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** {@code make bench-batch}: the batch build, K cold kernels, each repetition on 1 rank and then on 2, side by side. */
final class BatchBench {
  static final int KERNELS = 32;
  static final int REPS = 5;

  private BatchBench() {}

  /**
   * Times {@code mpiBuildKernels} of K kernels that no cache holds (the library's cache off, a fresh PoCL
   * cache per job, a salt in every kernel's options) on 1 rank and on 2, from a barrier until every rank
   * holds every kernel (the slowest rank's time). Beside them, the machine's own ceiling: two independent
   * single-rank jobs of K/2 kernels each, started together, one pinned to each core (the slower one's
   * time). Every compiling process pays the compiler's one-time start-up, and two compiles at once run a
   * little slower than one, so 2 ranks cannot beat that ceiling. Repetitions alternate the three, so that
   * the machine's drift hits all alike; the figures are medians of the per-repetition ratios.
   */
  static void run(Path repo, Path out, int k, int reps) throws Exception {
    List<Map<String, String>> rows = new ArrayList<>();
    List<Double> ratios = new ArrayList<>();
    List<Double> ceilings = new ArrayList<>();
    for (int rep = 0; rep < reps; rep++) {
      double one = batchJob(repo, 1, k, -1);
      double two = batchJob(repo, 2, k, -1);
      ExecutorService pool = Executors.newFixedThreadPool(2);
      Future<Double> a = pool.submit(() -> batchJob(repo, 1, k / 2, 0));
      Future<Double> b = pool.submit(() -> batchJob(repo, 1, k - k / 2, 1));
      double independent = Math.max(a.get(), b.get());
      pool.shutdown();
      rows.add(Map.of("rep", Integer.toString(rep), "kernels", Integer.toString(k),
          "one_rank_s", BenchReport.fmt(one), "two_ranks_s", BenchReport.fmt(two), "two_independent_halves_s", BenchReport.fmt(independent)));
      ratios.add(one / two);
      ceilings.add(one / independent);
      System.out.printf(Locale.ROOT, "bench batch: repetition %d: 1 rank %.3f s, 2 ranks %.3f s, two independent "
          + "halves %.3f s%n", rep + 1, one, two, independent);
    }
    double median = Stats.median(ratios);
    double ceiling = Stats.median(ceilings);
    StringBuilder md = new StringBuilder("Batch build of ").append(k).append(" cold kernels (`Scale batch ").append(k)
        .append("`), seconds from a barrier until every rank holds every kernel; beside it, two independent "
            + "1-rank jobs of ").append(k / 2).append(" kernels each, one per core, started together\n\n"
            + "| repetition | 1 rank | 2 ranks | two independent halves | 1 rank / 2 ranks | ceiling: 1 rank / halves |\n"
            + "|---|---|---|---|---|---|\n");
    for (int rep = 0; rep < reps; rep++) {
      Map<String, String> r = rows.get(rep);
      md.append(String.format(Locale.ROOT, "| %d | %s | %s | %s | %.2f | %.2f |%n", rep + 1, r.get("one_rank_s"),
          r.get("two_ranks_s"), r.get("two_independent_halves_s"), ratios.get(rep), ceilings.get(rep)));
    }
    String line = String.format(Locale.ROOT, "bench: batch kernels=%d reps=%d speedup_2_ranks=%.2f [%.2f-%.2f] "
        + "machine_ceiling=%.2f batch_over_ceiling=%.2f", k, reps, median, Collections.min(ratios),
        Collections.max(ratios), ceiling, median / ceiling);
    md.append('\n').append(line).append('\n');
    Files.writeString(out.resolve("batch.md"), md);
    List<Object> runs = new ArrayList<>();
    rows.forEach(r -> runs.add(BenchJson.typed(new TreeMap<>(r))));
    Files.writeString(out.resolve("batch.json"), BenchJson.pretty(BenchJson.object("kernels", k,
        "median_speedup_2_ranks", BenchJson.round(median, 3), "median_machine_ceiling", BenchJson.round(ceiling, 3),
        "runs", runs)));
    System.out.println();
    System.out.println(md);
    System.out.println(line);
  }

  /**
   * One {@code Scale batch} job of {@code k} fresh kernels on {@code n} ranks; with {@code core} >= 0 its
   * single rank is pinned to that core. Returns the slowest rank's seconds.
   */
  static double batchJob(Path repo, int n, int k, int core) throws Exception {
    Path pocl = Files.createTempDirectory("mpi-build-bench-pocl");
    try {
      List<String> cmd = new ArrayList<>(List.of("mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
          Integer.toString(n)));
      if (core >= 0) {
        cmd.addAll(List.of("--cpu-set", Integer.toString(core), "--bind-to", "core"));
      }
      cmd.addAll(List.of("-x", "MPI_BUILD_POCL_CACHE_ROOT=" + pocl, "-x", "MPI_BUILD_CACHE=off",
          "-x", "MPI_BUILD_JAVA_OPTS=-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xmx512m",
          repo.resolve("bin/mpi-build-rank").toString(), "-cp", System.getProperty("java.class.path"),
          "org.mpibuild.programs.Scale", "batch", Integer.toString(k), "bench" + System.nanoTime()));
      String output = BenchReport.run(cmd, Map.of(), 900);
      Matcher m = Pattern.compile("RESULT mode=batch rank=0 .*ok=true .*batch_seconds=([0-9.]+)").matcher(output);
      if (!m.find()) {
        throw new IllegalStateException("the batch build on " + n + " rank(s) printed no time:\n" + output);
      }
      return Double.parseDouble(m.group(1));
    } finally {
      BenchReport.deleteTree(pocl);
    }
  }
}
