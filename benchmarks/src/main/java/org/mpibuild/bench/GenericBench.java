package org.mpibuild.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** What generic code costs: {@code make bench-generic}, behind {@link BenchReport}. */
final class GenericBench {
  private GenericBench() {}

  /**
   * What generic code costs. First the kernels' speed: {@link KernelSpeed} runs the program's kernels at matrix
   * order {@code n} in a process of its own with PoCL's defaults (specialized work-group functions) and in
   * one with {@code POCL_WORK_GROUP_SPECIALIZATION=0} (generic code), each with an empty PoCL cache, paired,
   * the order alternating; the figure is the median of the per-repetition ratios generic / specialized.
   * Then a receiver's cost of an unnamed shape: a {@link Bench} {@code shapes} job at 2 ranks, mpi-build
   * with the request's launch shapes named and without, paired and alternated; the receiver's load + first
   * launch of each. {@code reps} is rounded up to an even number, at least 7 (so at least 8).
   */
  static void run(Path repo, Path out, String program, int n, int reps) throws Exception {
    int r = Stats.roundUpToMultiple(Math.max(7, reps), 2);
    if (r != reps) {
      System.out.println("bench generic: reps=" + reps + " rounded up to " + r + " (at least 7, a multiple of the 2 "
          + "variants so that each order occurs equally often)");
    }
    Map<String, List<Double>> speed = kernelSpeeds(program, n, r);
    List<Double> ratio = Stats.ratios(speed.get("generic"), speed.get("specialized"));
    List<Map<String, String>> cells = shapesJob(repo, out, program, r);
    List<Double> named = CellQueries.series(cells, 2, "collective", "receiver_ready_ms");
    List<Double> unnamed = CellQueries.series(cells, 2, "collective-unshaped", "receiver_ready_ms");
    List<Double> namedCompile = CellQueries.series(cells, 2, "collective", "compile_ms");
    List<Double> unnamedCompile = CellQueries.series(cells, 2, "collective-unshaped", "compile_ms");

    Map<String, Object> figures = BenchJson.object("program", program, "n", n, "reps", r,
        "generic_over_specialized", BenchLine.summary(ratio),
        "specialized_ms", BenchLine.summary(speed.get("specialized")), "generic_ms", BenchLine.summary(speed.get("generic")),
        "receiver_load_launch_named_ms", BenchLine.summary(named),
        "receiver_load_launch_unnamed_ms", BenchLine.summary(unnamed),
        "root_compile_named_ms", BenchLine.summary(namedCompile),
        "root_compile_unnamed_ms", BenchLine.summary(unnamedCompile));
    String line = String.format(Locale.ROOT, "bench: generic program=%s n=%d reps=%d generic_over_specialized=%s "
        + "receiver_load_launch_named_ms=%s receiver_load_launch_unnamed_ms=%s root_compile_named_ms=%s "
        + "root_compile_unnamed_ms=%s", program, n, r, bracket(ratio), bracket(named), bracket(unnamed),
        bracket(namedCompile), bracket(unnamedCompile));
    StringBuilder md = new StringBuilder();
    md.append("Kernel speed of `").append(program).append("` at matrix order ").append(n).append(", one round of every "
        + "kernel at its shape, ms (median of ").append(KernelSpeed.ROUNDS).append(" rounds per process), specialized "
        + "(PoCL's default) against generic code (`POCL_WORK_GROUP_SPECIALIZATION=0`), paired, order alternating\n\n"
        + "| repetition | specialized | generic | generic / specialized |\n|---|---|---|---|\n");
    for (int i = 0; i < r; i++) {
      md.append(String.format(Locale.ROOT, "| %d | %.1f | %.1f | %.3f |%n", i + 1, speed.get("specialized").get(i),
          speed.get("generic").get(i), ratio.get(i)));
    }
    md.append("\nA receiver's load + first launch at 2 ranks (mpi-build, `").append(program).append("`), with the "
        + "request's launch shapes named and without, paired, order alternating: median ms [95% interval]\n\n"
        + "| | shapes named | no shapes named |\n|---|---|---|\n")
        .append("| receiver load + first launch | ").append(ComparisonTables.ratioCell(named)).append(" | ")
        .append(ComparisonTables.ratioCell(unnamed)).append(" |\n")
        .append("| root's compile (code generation included) | ").append(ComparisonTables.ratioCell(namedCompile))
        .append(" | ").append(ComparisonTables.ratioCell(unnamedCompile)).append(" |\n");
    md.append('\n').append(line).append('\n');
    Files.writeString(out.resolve("generic.md"), md);
    Files.writeString(out.resolve("generic.json"), BenchJson.pretty(BenchJson.object("figures", figures,
        "speed_ms", speed, "cells", cells.stream().map(BenchJson::typed).toList())));
    System.out.println();
    System.out.println(md);
    System.out.println(line);
  }

  /**
   * The kernels' speed in {@code r} pairs of processes, specialized and generic code, the order alternating: ms
   * per round of every kernel, by variant.
   */
  private static Map<String, List<Double>> kernelSpeeds(String program, int n, int r) throws Exception {
    Map<String, List<Double>> speed = new TreeMap<>();
    List<String> variants = List.of("specialized", "generic");
    Pattern ms = Pattern.compile("SPEED ms=([0-9.]+)");
    for (int rep = 0; rep < r; rep++) {
      for (String v : Bench.rotated(variants, rep)) {
        Path pocl = Files.createTempDirectory("mpi-build-bench-speed");
        try {
          Map<String, String> env = new HashMap<>(Map.of("POCL_CACHE_DIR", pocl.toString()));
          if (v.equals("generic")) {
            env.put("POCL_WORK_GROUP_SPECIALIZATION", "0");
          }
          String output = BenchReport.run(List.of("java", "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"),
              "org.mpibuild.bench.KernelSpeed", program, Integer.toString(n), v + " " + rep + " " + System.nanoTime()),
              env, 900);
          Matcher m = ms.matcher(output);
          if (!m.find()) {
            throw new IllegalStateException("KernelSpeed printed no time:\n" + output);
          }
          speed.computeIfAbsent(v, x -> new ArrayList<>()).add(Double.parseDouble(m.group(1)));
          System.out.printf(Locale.ROOT, "bench generic: repetition %d, %s code: %s ms per round of every kernel%n",
              rep + 1, v, m.group(1));
        } finally {
          BenchReport.deleteTree(pocl);
        }
      }
    }
    return speed;
  }

  /** A {@link Bench} {@code shapes} job at 2 ranks, {@code r} repetitions: its cells. */
  private static List<Map<String, String>> shapesJob(Path repo, Path out, String program, int r) throws Exception {
    Path work = Files.createTempDirectory(out, "work-shapes-");
    Path jsonl = out.resolve("cells-2-shapes.jsonl");
    BenchReport.run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", "2", "-cp", System.getProperty("java.class.path"),
        "org.mpibuild.bench.Bench", jsonl.toString(), "shapes", Integer.toString(r), program),
        Map.of("MPI_BUILD_BENCH_DIR", work.toString(), "MPI_BUILD_BENCH_RUN", Long.toString(System.nanoTime()),
            "MPI_BUILD_JAVA_OPTS", "-XX:+UseSerialGC -Xmx1g"), 3600);
    BenchReport.deleteTree(work);
    return BenchJson.readLines(Files.readString(jsonl));
  }

  /** "1.23[1.10-1.40]": a median and its 95% interval. */
  static String bracket(List<Double> xs) {
    Stats.Interval i = Stats.medianInterval(xs, 0.95);
    return String.format(Locale.ROOT, "%s[%s-%s]", BenchJson.round(Stats.median(xs), 3), BenchJson.round(i.low(), 3),
        BenchJson.round(i.high(), 3));
  }
}
