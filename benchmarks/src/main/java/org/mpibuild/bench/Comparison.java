package org.mpibuild.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.mpibuild.support.BackendSupport;

/**
 * {@code make bench}: the main comparison. For each N it runs a {@link Bench} cold job and a warm job under
 * mpirun, then {@link BcastBench} at 4 and 2 ranks; then it writes Markdown tables (times, CPU, where the
 * time goes), two charts (time to ready; its phases), JSON with every raw figure and the machine, and the
 * {@code bench:} line with the goals. Every ratio is a median of per-repetition ratios with a
 * distribution-free 95% interval; cells in the same job are paired, warm over cold is not (two jobs), and
 * says so in its name.
 */
final class Comparison {
  record Mode(String name, List<Integer> ranks, int reps, String program, List<Integer> bcastSizes, int bcastReps) {}

  static final List<Integer> BCAST_SIZES = List.of(1 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20);
  static final Mode QUICK = new Mode("quick", List.of(1, 2, 4, 8, 16), 6, "matmul4", BCAST_SIZES, 15);
  static final Mode FULL = new Mode("full", List.of(1, 2, 4, 8, 16), 12, "matmul24", BCAST_SIZES, 21);

  /**
   * Repetitions must be a multiple of this: the least common multiple of the cold and warm jobs' numbers of
   * strategies, so that in each job every rotation of the strategies occurs equally often.
   */
  static final int REPS_MULTIPLE = Stats.lcm(Bench.COLD.size(), Bench.WARM.size());

  /** The strategies as the tables and chart name them, with the cells' strategy ids. */
  static final Map<String, String> LABELS = labels();

  private static Map<String, String> labels() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("naive", "naive (every rank compiles)");
    m.put("lock", "OCCA <=1.1 (lock directory)");
    m.put("lock-long", "OCCA <=1.1, compile > stale age");
    m.put("occa12", "OCCA >=1.2 (every rank compiles, atomic rename)");
    m.put("collective", "mpi-build, cold cache, shapes named");
    m.put("limit-finished", "physical limit (root: front end + named functions; raw bcast; load)");
    m.put("limit", "old limit, generic code (previous benchmark)");
    m.put("occa12-warm", "OCCA >=1.2, warm (unpaired)");
    m.put("collective-warm", "mpi-build, warm cache (unpaired)");
    return m;
  }

  /** The labels that differ for results of the benchmark before every phase was timed. */
  static final Map<String, String> OLD_LABELS = Map.of(
      "naive", "naive (every rank compiles and reads the binary)",
      "collective", "mpi-build, cold cache (no shapes named)");

  /** The label of {@code strategy}, for results of today's benchmark or ({@code old}) the earlier one. */
  static String label(String strategy, boolean old) {
    return old ? OLD_LABELS.getOrDefault(strategy, LABELS.get(strategy)) : LABELS.get(strategy);
  }

  /** Short names for the phase chart's categories. */
  static final Map<String, String> SHORT = Map.of("naive", "naive", "lock", "lock", "lock-long", "lock-long",
      "occa12", "occa12", "collective", "mpi-build", "limit-finished", "limit-fin.", "limit", "limit(old)",
      "occa12-warm", "occa12 warm", "collective-warm", "mpi-b. warm");

  /** The strategies of {@link #LABELS} that {@code cells} hold at any of {@code ns} (old results lack some). */
  static List<String> present(List<Map<String, String>> cells, List<Integer> ns) {
    List<String> out = new ArrayList<>();
    for (String s : LABELS.keySet()) {
      if (ns.stream().anyMatch(n -> !series(cells, n, s, "ms").isEmpty())) {
        out.add(s);
      }
    }
    return out;
  }

  /** What a table prints where a strategy has no cells at an N: its job failed, or it was never run. */
  static final String NOT_MEASURED = "not measured";

  /** The median of a field as a table prints it, {@link #NOT_MEASURED} where there is none. */
  static String medianCell(List<Map<String, String>> cells, int n, String strategy, String field) {
    List<Double> xs = series(cells, n, strategy, field);
    return xs.isEmpty() ? NOT_MEASURED : fmt(Stats.median(xs));
  }

  /** Whether every cell of {@code strategy} at N has {@code field}. */
  static boolean has(List<Map<String, String>> cells, int n, String strategy, String field) {
    boolean any = false;
    for (Map<String, String> c : cells) {
      if (c.get("n").equals(Integer.toString(n)) && c.get("strategy").equals(strategy)) {
        if (!c.containsKey(field)) {
          return false;
        }
        any = true;
      }
    }
    return any;
  }

  /** The paired ratios of the {@code bench:} line: name, numerator, denominator, field. */
  record Ratio(String name, String over, String under, String field, String underField) {
    Ratio(String name, String over, String under, String field) {
      this(name, over, under, field, field);
    }

    /** Whether it means something at N: the root's compile phase is the slowest rank's only on one rank. */
    boolean appliesAt(int n) {
      return !name.startsWith("root_compile") || n == 1;
    }
  }

  static final List<Ratio> RATIOS = List.of(
      new Ratio("naive_over_collective", "naive", "collective", "ms"),
      new Ratio("lock_over_collective", "lock", "collective", "ms"),
      new Ratio("lock_long_over_collective", "lock-long", "collective", "ms"),
      new Ratio("occa12_over_collective", "occa12", "collective", "ms"),
      new Ratio("collective_over_limit_finished", "collective", "limit-finished", "ms"),
      new Ratio("collective_over_limit", "collective", "limit", "ms"),
      new Ratio("warm_over_cold_unpaired", "collective-warm", "collective", "ms"),
      new Ratio("occa12_warm_over_collective_warm", "occa12-warm", "collective-warm", "ms"),
      new Ratio("cpu_naive_over_cpu_collective", "naive", "collective", "cpu_s"),
      new Ratio("collective_over_naive", "collective", "naive", "ms"),
      new Ratio("root_compile_over_naive_compile_launch", "collective", "naive", "phase_compile_ms",
          "compile_launch_ms"));

  /** Whether both sides of {@code r} were measured at N (results of an older benchmark lack some). */
  static boolean measured(List<Map<String, String>> cells, int n, Ratio r) {
    return r.appliesAt(n) && has(cells, n, r.over(), r.field()) && has(cells, n, r.under(), r.underField());
  }

  /**
   * A goal of the {@code bench:} line: a figure at N (a paired ratio, or a field's values) against a bound.
   * Judged on the median; the interval is printed beside it.
   */
  record Goal(String name, int n, Ratio ratio, String strategy, String field, double bound, boolean atMost) {
    List<Double> values(List<Map<String, String>> cells) {
      if (ratio != null) {
        return ratios(cells, n, ratio);
      }
      List<Double> out = new ArrayList<>();
      for (double v : series(cells, n, strategy, field)) {
        if (v >= 0) {
          out.add(v);
        }
      }
      return out;
    }

    boolean measurable(List<Map<String, String>> cells) {
      return ratio != null ? measured(cells, n, ratio) : has(cells, n, strategy, field);
    }
  }

  static Ratio ratio(String name) {
    return RATIOS.stream().filter(r -> r.name().equals(name)).findFirst().orElseThrow();
  }

  /**
   * The goals of issue 41 at the N this mode ran (a goal whose N did not run is not judged): at N = 1 mpi-build
   * cold within 1.10 of naive, the root's compile within 1.2 of a naive rank's compile and first launches, warm
   * within 0.10 of cold; at N = 2 naive over mpi-build at least 1.0 in time and 1.8 in CPU; a receiver's load and
   * first launch at most 50 ms at 4 ranks (else the smallest N with a receiver); at N = 16 naive over mpi-build
   * at least 6 in time and 8 in CPU, warm within 0.25 of cold; and mpi-build within 1.1 of the physical limit at
   * the largest N.
   */
  static List<Goal> goals(Mode mode) {
    List<Integer> ns = mode.ranks();
    int top = ns.get(ns.size() - 1);
    List<Goal> out = new ArrayList<>();
    if (ns.contains(1)) {
      out.add(new Goal("collective_over_naive_n1_le_1.10", 1, ratio("collective_over_naive"), null, null, 1.10, true));
      out.add(new Goal("root_compile_over_naive_compile_launch_n1_le_1.2", 1,
          ratio("root_compile_over_naive_compile_launch"), null, null, 1.2, true));
      out.add(new Goal("warm_over_cold_unpaired_n1_le_0.10", 1, ratio("warm_over_cold_unpaired"), null, null, 0.10,
          true));
    }
    if (ns.contains(2)) {
      out.add(new Goal("naive_over_collective_n2_ge_1.0", 2, ratio("naive_over_collective"), null, null, 1.0, false));
      out.add(new Goal("cpu_naive_over_cpu_collective_n2_ge_1.8", 2, ratio("cpu_naive_over_cpu_collective"), null,
          null, 1.8, false));
    }
    (ns.contains(4) ? java.util.Optional.of(4) : ns.stream().filter(n -> n > 1).findFirst()).ifPresent(n -> out.add(
        new Goal("receiver_load_launch_ms_n" + n + "_le_50", n, null, "collective", "receiver_ready_ms", 50, true)));
    if (ns.contains(16)) {
      out.add(new Goal("naive_over_collective_n16_ge_6", 16, ratio("naive_over_collective"), null, null, 6, false));
      out.add(new Goal("cpu_naive_over_cpu_collective_n16_ge_8", 16, ratio("cpu_naive_over_cpu_collective"), null,
          null, 8, false));
      out.add(new Goal("warm_over_cold_unpaired_n16_le_0.25", 16, ratio("warm_over_cold_unpaired"), null, null, 0.25,
          true));
    }
    out.add(new Goal("collective_over_limit_finished_n" + top + "_le_1.1", top,
        ratio("collective_over_limit_finished"), null, null, 1.1, true));
    return out;
  }

  /** Broadcast sizes in the {@code bench:} line. */
  static final List<Integer> LINE_SIZES = List.of(1 << 10, 1 << 20, 64 << 20);

  private Comparison() {}

  /** The mode with {@code ranks=1,2,4}, {@code reps=N} or {@code program=NAME} from the command line. */
  static Mode override(Mode m, List<String> args) {
    for (String a : args) {
      String[] kv = a.split("=", 2);
      if (kv.length != 2) {
        throw new IllegalArgumentException("expected ranks=..., reps=... or program=..., not '" + a + "'");
      }
      switch (kv[0]) {
        case "ranks" -> m = new Mode(m.name(), Arrays.stream(kv[1].split(",")).map(Integer::valueOf).toList(),
            m.reps(), m.program(), m.bcastSizes(), m.bcastReps());
        case "reps" -> m = new Mode(m.name(), m.ranks(), Integer.parseInt(kv[1]), m.program(), m.bcastSizes(),
            Math.max(Integer.parseInt(kv[1]), 7));
        case "program" -> m = new Mode(m.name(), m.ranks(), m.reps(), kv[1], m.bcastSizes(), m.bcastReps());
        default -> throw new IllegalArgumentException("unknown setting '" + kv[0] + "' in '" + a + "'");
      }
    }
    if (m.reps() < 6) {
      throw new IllegalArgumentException("reps=" + m.reps() + " is too few for a 95% interval of a median (6 or more)");
    }
    int reps = Stats.roundUpToMultiple(m.reps(), REPS_MULTIPLE);
    if (reps != m.reps()) {
      System.out.println("bench: reps=" + m.reps() + " rounded up to " + reps + ", a multiple of " + REPS_MULTIPLE
          + " (the cold job's " + Bench.COLD.size() + " and the warm job's " + Bench.WARM.size() + " strategies), so "
          + "that every rotation order occurs equally often");
      m = new Mode(m.name(), m.ranks(), reps, m.program(), m.bcastSizes(), m.bcastReps());
    }
    return m;
  }

  static void run(Path repo, Path out, Mode mode) throws Exception {
    long started = System.nanoTime();
    Map<String, Object> machine = Machine.describe(repo);
    System.out.println("bench: mode " + mode.name() + ", ranks " + mode.ranks() + ", " + mode.reps()
        + " repetitions per cell after a dropped warm-up (cold cells paired in one job, warm cells in another), program " + mode.program() + "; machine " + machine);
    List<Map<String, String>> cells = new ArrayList<>();
    List<String> lost = new ArrayList<>(); // the jobs that failed: said in the report, never the end of it
    for (int n : mode.ranks()) {
      Path work = Files.createTempDirectory(out, "work-" + n + "-");
      String salt = Long.toString(System.nanoTime());
      boolean coldLost = false;
      for (String phase : List.of("cold", "warm")) {
        Path jsonl = out.resolve("cells-" + n + "-" + phase + ".jsonl");
        if (coldLost) { // the warm job reads the cold job's caches: without them its cells would be cold ones
          lost.add("the warm job at N = " + n + " was not run: the cold job before it failed");
          continue;
        }
        try {
          BenchReport.run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", Integer.toString(n), "-cp",
              System.getProperty("java.class.path"), "org.mpibuild.bench.Bench", jsonl.toString(), phase,
              Integer.toString(mode.reps()), mode.program()),
              Map.of("MPI_BUILD_BENCH_DIR", work.toString(), "MPI_BUILD_BENCH_RUN", salt,
                  "MPI_BUILD_JAVA_OPTS", "-XX:+UseSerialGC -Xmx1g"), 3600);
          cells.addAll(BenchJson.readLines(Files.readString(jsonl)));
        } catch (Exception | AssertionError e) {
          // The job wrote each cell as it measured it: what it finished is kept, paired by repetition.
          List<Map<String, String>> partial = List.of();
          try {
            partial = Files.exists(jsonl) ? BenchJson.readCompleteLines(Files.readString(jsonl)) : List.of();
          } catch (Exception | AssertionError unreadable) {
            // not the job's lines: nothing of it is kept
          }
          cells.addAll(partial);
          String why = "the " + phase + " job at N = " + n + " failed after " + partial.size() + " cells (kept, paired "
              + "by repetition; the rest are missing): " + BackendSupport.firstLine(e);
          System.out.println("bench: " + why);
          lost.add(why);
          coldLost = phase.equals("cold");
        }
      }
      BenchReport.deleteTree(work);
    }
    for (int n : mode.ranks()) {
      if (!series(cells, n, Bench.LOCK_LONG_VOID, "ms").isEmpty()) {
        lost.add("lock-long at N = " + n + " measured nothing (its compile was not longer than its stale age): its "
            + "cells are in results.json as " + Bench.LOCK_LONG_VOID + ", left out of the tables");
      }
    }
    List<Map<String, String>> bcasts = new ArrayList<>();
    for (int n : List.of(4, 2)) {
      Path jsonl = out.resolve("bcast-" + n + ".jsonl");
      try {
        BenchReport.run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", Integer.toString(n), "-cp",
            System.getProperty("java.class.path"), "org.mpibuild.bench.BcastBench", jsonl.toString(),
            Integer.toString(mode.bcastReps()), join(mode.bcastSizes())),
            Map.of("MPI_BUILD_JAVA_OPTS", "-XX:+UseSerialGC -Xmx1g -XX:MaxDirectMemorySize=6g"), 1800);
        bcasts.addAll(BenchJson.readLines(Files.readString(jsonl)));
      } catch (Exception | AssertionError e) {
        lost.add("the broadcast job at N = " + n + " failed: " + BackendSupport.firstLine(e));
      }
    }
    int cores = ((Number) machine.get("cores")).intValue();
    String md;
    Map<String, Object> line;
    String benchLine;
    try {
      md = markdown(mode, cells, bcasts, cores);
      line = lineFigures(mode, cells, bcasts);
      benchLine = benchLine(mode, line);
    } catch (RuntimeException e) {
      // A strategy missing at an N is printed as not measured; anything else that stops the tables keeps the cells.
      String why = "the tables and the bench: line could not be made from what was measured ("
          + BackendSupport.firstLine(e) + "); every cell is in results.json";
      System.out.println("bench: " + why);
      lost.add(why);
      md = "(no tables: see Not measured)";
      line = Map.of();
      benchLine = "bench: not judged";
    }
    StringBuilder notes = new StringBuilder();
    lost.forEach(l -> notes.append("\n- ").append(l));
    Files.writeString(out.resolve("results.md"), md + "\n" + benchLine + "\n"
        + (notes.length() == 0 ? "" : "\nNot measured:" + notes + "\n"));
    List<Object> typedCells = new ArrayList<>();
    cells.forEach(c -> typedCells.add(BenchJson.typed(c)));
    List<Object> typedBcasts = new ArrayList<>();
    bcasts.forEach(b -> typedBcasts.add(BenchJson.typed(b)));
    Files.writeString(out.resolve("results.json"), BenchJson.pretty(BenchJson.object("mode", mode.name(),
        "program", mode.program(), "reps", mode.reps(), "phases", "each cell's phase_*_ms are the slowest rank's "
        + "(phase_rank), phase_other_ms its time outside every phase; receiver_ready_ms is the slowest receiver's "
        + "load + first launch (-1: no rank received a binary)", "machine", machine, "bench", line, "cells", typedCells,
        "broadcast", typedBcasts, "not_measured", lost)));
    // The charts last: results.md and results.json are written whatever happens to them.
    try {
      Chart.write(mode, cells, machine, out.resolve("time-to-ready.png"));
      Chart.writePhases(mode, cells, machine, out.resolve("phases.png"));
    } catch (RuntimeException | Error e) { // AWT without fonts (a bare container) throws an Error
      System.out.println("bench: the charts failed (results.md and results.json are written): " + BackendSupport.firstLine(e));
      e.printStackTrace(System.out);
    }
    System.out.println();
    System.out.println(md);
    lost.forEach(l -> System.out.println("bench: not measured: " + l));
    System.out.printf(Locale.ROOT, "bench: wrote %s, %s, %s and %s in %.1f min%n", out.resolve("results.md"),
        out.resolve("time-to-ready.png"), out.resolve("phases.png"), out.resolve("results.json"),
        (System.nanoTime() - started) / 6e10);
    System.out.println(benchLine);
  }

  static String join(List<Integer> xs) {
    StringBuilder sb = new StringBuilder();
    xs.forEach(x -> sb.append(sb.length() == 0 ? "" : ",").append(x));
    return sb.toString();
  }

  /** A field of one strategy's cells at N, ordered by repetition. */
  static List<Double> series(List<Map<String, String>> cells, int n, String strategy, String field) {
    List<Map<String, String>> rows = new ArrayList<>();
    for (Map<String, String> c : cells) {
      if (c.get("n").equals(Integer.toString(n)) && c.get("strategy").equals(strategy)) {
        rows.add(c);
      }
    }
    rows.sort(Comparator.comparingInt(c -> Integer.parseInt(c.get("rep"))));
    List<Double> out = new ArrayList<>();
    rows.stream().filter(r -> r.containsKey(field)).forEach(r -> out.add(Double.parseDouble(r.get(field))));
    return out;
  }

  /**
   * The paired per-repetition ratios of {@code r} at N: repetition i over repetition i, for every repetition
   * both sides have (a job that died midway leaves one side shorter; its unpaired cells are left out).
   */
  static List<Double> ratios(List<Map<String, String>> cells, int n, Ratio r) {
    Map<String, Double> under = byRep(cells, n, r.under(), r.underField());
    List<Double> over = new ArrayList<>();
    List<Double> paired = new ArrayList<>();
    byRep(cells, n, r.over(), r.field()).forEach((rep, x) -> {
      if (under.containsKey(rep)) {
        over.add(x);
        paired.add(under.get(rep));
      }
    });
    return Stats.ratios(over, paired);
  }

  /** A field of one strategy's cells at N by repetition number, in repetition order. */
  static Map<String, Double> byRep(List<Map<String, String>> cells, int n, String strategy, String field) {
    Map<String, Double> out = new java.util.TreeMap<>(Comparator.comparingInt(Integer::parseInt));
    for (Map<String, String> c : cells) {
      if (c.get("n").equals(Integer.toString(n)) && c.get("strategy").equals(strategy) && c.containsKey(field)) {
        out.put(c.get("rep"), Double.parseDouble(c.get(field)));
      }
    }
    return out;
  }

  /** The broadcast rows of one size at N ranks, ordered by repetition. */
  static List<Map<String, String>> bcastRows(List<Map<String, String>> rows, int n, int bytes) {
    List<Map<String, String>> out = new ArrayList<>();
    for (Map<String, String> r : rows) {
      if (r.get("n").equals(Integer.toString(n)) && r.get("bytes").equals(Integer.toString(bytes))) {
        out.add(r);
      }
    }
    return out;
  }

  static List<Double> column(List<Map<String, String>> rows, String field) {
    List<Double> out = new ArrayList<>();
    rows.forEach(r -> out.add(Double.parseDouble(r.get(field))));
    return out;
  }

  /** The median of a field, or -1 where the cells lack it. */
  static double medianOr(List<Map<String, String>> cells, int n, String strategy, String field) {
    return has(cells, n, strategy, field) ? Stats.median(series(cells, n, strategy, field)) : -1;
  }

  /** The cells of {@code strategy} at N whose receiver figure is a measurement (not -1). */
  static List<Map<String, String>> receivers(List<Map<String, String>> cells, int n, String strategy) {
    List<Map<String, String>> out = new ArrayList<>();
    for (Map<String, String> c : cells) {
      if (c.get("n").equals(Integer.toString(n)) && c.get("strategy").equals(strategy)
          && c.containsKey("receiver_ready_ms") && Double.parseDouble(c.get("receiver_ready_ms")) >= 0) {
        out.add(c);
      }
    }
    return out;
  }

  /** Median, interval and coverage of a list of ratios, for JSON. */
  static Map<String, Object> summary(List<Double> xs) {
    Stats.Interval i = Stats.medianInterval(xs, 0.95);
    return BenchJson.object("median", BenchJson.round(Stats.median(xs), 3), "ci95_low", BenchJson.round(i.low(), 3),
        "ci95_high", BenchJson.round(i.high(), 3), "coverage", BenchJson.round(i.coverage(), 4),
        "min", BenchJson.round(Stats.min(xs), 3), "max", BenchJson.round(Stats.max(xs), 3), "reps", xs.size());
  }

  /** The {@code bench:} line's figures at the largest N, and the broadcast at 4 ranks. */
  static Map<String, Object> lineFigures(Mode mode, List<Map<String, String>> cells, List<Map<String, String>> bcasts) {
    int n = mode.ranks().get(mode.ranks().size() - 1);
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("ranks", n);
    for (Ratio r : RATIOS) {
      if (measured(cells, n, r) && ratios(cells, n, r).size() >= 6) {
        out.put(r.name(), summary(ratios(cells, n, r)));
      }
    }
    if (has(cells, n, "lock-long", "compiles")) {
      out.put("lock_long_compiles", summary(series(cells, n, "lock-long", "compiles")));
    }
    Map<String, Object> goals = new LinkedHashMap<>();
    // Goals belong to the benchmark that times every phase; results of an older one have none.
    for (Goal g : has(cells, n, "collective", "phase_setup_ms") ? goals(mode) : List.<Goal>of()) {
      if (g.measurable(cells) && g.values(cells).size() >= 6) {
        Map<String, Object> s = summary(g.values(cells));
        s.put("bound", g.bound());
        s.put("verdict", Stats.verdict(Stats.median(g.values(cells)), g.bound(), g.atMost()));
        goals.put(g.name(), s);
      }
    }
    if (!goals.isEmpty()) {
      out.put("goals", goals);
    }
    for (int bytes : LINE_SIZES) {
      List<Map<String, String>> rows = bcastRows(bcasts, 4, bytes);
      if (rows.isEmpty()) {
        continue;
      }
      out.put("envelope_over_raw_" + human(bytes), summary(Stats.ratios(column(rows, "envelope_us"),
          column(rows, "java_direct_us"))));
    }
    return out;
  }

  @SuppressWarnings("unchecked")
  static String benchLine(Mode mode, Map<String, Object> figures) {
    StringBuilder sb = new StringBuilder("bench: ranks=" + figures.get("ranks") + " reps=" + mode.reps());
    figures.forEach((k, v) -> {
      if (k.equals("goals")) {
        ((Map<String, Object>) v).forEach((g, x) -> {
          Map<String, Object> s = (Map<String, Object>) x;
          sb.append(String.format(Locale.ROOT, " goal_%s=%s:%s[%s-%s]", g, s.get("verdict"), s.get("median"),
              s.get("ci95_low"), s.get("ci95_high")));
        });
      } else if (v instanceof Map<?, ?> m) {
        Map<String, Object> s = (Map<String, Object>) m;
        sb.append(String.format(Locale.ROOT, " %s=%s[%s-%s]", k, s.get("median"), s.get("ci95_low"), s.get("ci95_high")));
      }
    });
    return sb.toString();
  }

  /** "1KiB", "64MiB": whole units, as the line's keys use them. */
  static String human(long bytes) {
    return bytes % (1 << 20) == 0 ? (bytes >> 20) + "MiB" : bytes % 1024 == 0 ? (bytes >> 10) + "KiB" : bytes + "B";
  }

  static String fmt(double x) {
    return x >= 100 ? String.format(Locale.ROOT, "%.0f", x) : String.format(Locale.ROOT, "%.3g", x);
  }

  /**
   * "1.23 [1.10-1.40]": the median of paired ratios and its 95% interval; with fewer than 6 pairs (a job that
   * died midway) the range, and how many pairs; {@link #NOT_MEASURED} with none.
   */
  static String ratioCell(List<Double> xs) {
    if (xs.isEmpty()) {
      return NOT_MEASURED;
    }
    Stats.Interval i = Stats.intervalOrRange(xs);
    return fmt(Stats.median(xs)) + " [" + fmt(i.low()) + "-" + fmt(i.high()) + "]"
        + (xs.size() < 6 ? " (" + xs.size() + " pairs: range, no interval)" : "");
  }

  static String markdown(Mode mode, List<Map<String, String>> cells, List<Map<String, String>> bcasts, int cores) {
    StringBuilder sb = new StringBuilder();
    int first = mode.ranks().get(0);
    List<String> cols = present(cells, mode.ranks());
    if (cols.isEmpty()) {
      return "(no cell was measured: see Not measured)\n";
    }
    boolean phases = cells.stream().anyMatch(c -> c.containsKey("phase_setup_ms"));
    if (!phases) {
      sb.append("**These figures come from the benchmark as it was before every phase was timed**: naive read the "
          + "program binary, the limit built generic code, mpi-build's context was created outside the timed region, "
          + "and no request named its launch shapes. Run `make bench` and `make bench-publish` for figures of the "
          + "benchmark this page describes.\n\n");
    }
    sb.append("Time until every rank holds a ready kernel (context open, built or loaded, every kernel launched once "
        + "and finished), program `").append(mode.program()).append("`: median ms [min-max] over ").append(mode.reps())
        .append(" repetitions; compiles summed over ranks. Runs with N > ").append(cores)
        .append(" cores are oversubscribed. Warm cells ran in a job of their own: unpaired with the cold ones.\n\n| N | cores |");
    cols.forEach(s -> sb.append(' ').append(label(s, !phases)).append(" |"));
    sb.append("\n|---|---|");
    cols.forEach(s -> sb.append("---|"));
    sb.append('\n');
    for (int n : mode.ranks()) {
      sb.append("| ").append(n).append(" | ").append(n <= cores ? "a core per rank" : "oversubscribed").append(" |");
      for (String s : cols) {
        List<Double> ms = series(cells, n, s, "ms");
        if (ms.isEmpty()) {
          sb.append(' ').append(NOT_MEASURED).append(" |");
          continue;
        }
        sb.append(' ').append(fmt(Stats.median(ms))).append(" [").append(fmt(Stats.min(ms))).append('-')
            .append(fmt(Stats.max(ms))).append("]; ").append(medianCell(cells, n, s, "compiles")).append(" |");
      }
      sb.append('\n');
    }
    sb.append("\nCPU-seconds summed over ranks (median), and shared-directory file operations (median)\n\n| N |");
    cols.forEach(s -> sb.append(' ').append(label(s, !phases)).append(" |"));
    sb.append("\n|---|");
    cols.forEach(s -> sb.append("---|"));
    sb.append('\n');
    for (int n : mode.ranks()) {
      sb.append("| ").append(n).append(" |");
      for (String s : cols) {
        sb.append(' ').append(series(cells, n, s, "cpu_s").isEmpty() ? NOT_MEASURED
            : medianCell(cells, n, s, "cpu_s") + " s; " + medianCell(cells, n, s, "fsops")).append(" |");
      }
      sb.append('\n');
    }
    if (phases) {
      sb.append("\nWhere the time goes: the slowest rank's phases, median ms over the repetitions (each phase's "
          + "median, so they need not add up to the median total); \"other\" is that rank's time outside every "
          + "phase. Receiver: the slowest receiver's load + first launch (median ms). docs/benchmarks.md says what "
          + "each strategy cannot split.\n\n| N | strategy |");
      Phases.NAMES.forEach(p -> sb.append(' ').append(p).append(" |"));
      sb.append(" other | total | receiver load + launch |\n|---|---|");
      Phases.NAMES.forEach(p -> sb.append("---|"));
      sb.append("---|---|---|\n");
      for (int n : mode.ranks()) {
        for (String s : cols) {
          if (series(cells, n, s, "ms").isEmpty()) {
            continue;
          }
          sb.append("| ").append(n).append(" | ").append(SHORT.getOrDefault(s, s)).append(" |");
          for (String p : Phases.NAMES) {
            sb.append(' ').append(medianCell(cells, n, s, "phase_" + p + "_ms")).append(" |");
          }
          double recv = medianOr(receivers(cells, n, s), n, s, "receiver_ready_ms");
          sb.append(' ').append(medianCell(cells, n, s, "phase_other_ms")).append(" | ")
              .append(medianCell(cells, n, s, "ms")).append(" | ")
              .append(recv < 0 ? "-" : fmt(recv)).append(" |\n");
        }
      }
    }
    List<Ratio> ratios = RATIOS.stream().filter(r -> mode.ranks().stream().anyMatch(n -> measured(cells, n, r))).toList();
    boolean lockLong = mode.ranks().stream().anyMatch(n -> has(cells, n, "lock-long", "ms"));
    sb.append("\nRatios: the median of the per-repetition ratios, [95% interval of that median]; cells of one job "
        + "are paired, warm over cold is unpaired (two jobs; repetition i over repetition i)\n\n| N |");
    ratios.forEach(r -> sb.append(' ').append(r.name()).append(" |"));
    sb.append(lockLong ? " lock-long compiles | lock-long stale / poll ms |\n|---|" : "\n|---|");
    ratios.forEach(r -> sb.append("---|"));
    sb.append(lockLong ? "---|---|\n" : "\n");
    for (int n : mode.ranks()) {
      sb.append("| ").append(n).append(" |");
      ratios.forEach(r -> sb.append(' ').append(r.appliesAt(n) ? ratioCell(ratios(cells, n, r)) : "-").append(" |"));
      if (lockLong && !has(cells, n, "lock-long", "ms")) {
        sb.append(' ').append(NOT_MEASURED).append(" | ").append(NOT_MEASURED).append(" |");
      } else if (lockLong) {
        sb.append(' ').append(medianCell(cells, n, "lock-long", "compiles")).append(" | ")
            .append(medianCell(cells, n, "lock-long", "stale_ms")).append(" / ")
            .append(medianCell(cells, n, "lock-long", "poll_ms")).append(" (compile ")
            .append(medianCell(cells, n, "lock-long", "compile_ms")).append(" ms) |");
      }
      sb.append('\n');
    }
    Map<String, Object> line = lineFigures(mode, cells, bcasts);
    if (line.get("goals") instanceof Map<?, ?> goals) {
      sb.append("\nGoals, judged on the median; [95% interval]\n\n| goal | verdict | median [95%] |\n|---|---|---|\n");
      goals.forEach((g, x) -> {
        Map<?, ?> m = (Map<?, ?>) x;
        sb.append("| ").append(g).append(" | ").append(m.get("verdict")).append(" | ").append(m.get("median"))
            .append(" [").append(m.get("ci95_low")).append('-').append(m.get("ci95_high")).append("] |\n");
      });
    }
    for (int n : List.of(4, 2)) {
      sb.append("\nBroadcast of a binary at ").append(n).append(" ranks").append(n > cores ? " (oversubscribed)" : "")
          .append(": mpi-build's envelope broadcast (header, metadata, CRC32C table, pieces checked on arrival) "
              + "against a raw Java direct-buffer MPI_Bcast of the same bytes in the same job, slowest rank, paired "
              + "and alternated; median us over ").append(mode.bcastReps()).append(" repetitions\n\n"
              + "| payload | raw | envelope | envelope / raw [95%] | envelope - raw (us) | whole call | goal |\n"
              + "|---|---|---|---|---|---|---|\n");
      for (int bytes : mode.bcastSizes()) {
        List<Map<String, String>> rows = bcastRows(bcasts, n, bytes);
        if (rows.isEmpty()) {
          sb.append("| ").append(human(bytes)).append(" | ").append(NOT_MEASURED).append(" | | | | | |\n");
          continue;
        }
        List<Double> raw = column(rows, "java_direct_us");
        List<Double> env = column(rows, "envelope_us");
        List<Double> ratio = Stats.ratios(env, raw);
        List<Double> diff = new ArrayList<>();
        for (int i = 0; i < raw.size(); i++) {
          diff.add(env.get(i) - raw.get(i));
        }
        String goal = bytes >= (1 << 20) ? (Stats.median(ratio) <= 1.1 ? "met (<= 1.1x)" : "missed (> 1.1x)")
            : bytes <= (64 << 10) ? (Stats.median(diff) <= 300 ? "met (<= raw + 0.3 ms)" : "missed (> raw + 0.3 ms)")
            : "";
        sb.append("| ").append(human(bytes)).append(" | ").append(fmt(Stats.median(raw))).append(" | ")
            .append(fmt(Stats.median(env))).append(" | ").append(ratioCell(ratio)).append(" | ")
            .append(fmt(Stats.median(diff))).append(" | ").append(fmt(Stats.median(column(rows, "call_us"))))
            .append(" | ").append(goal).append(" |\n");
      }
    }
    return sb.toString();
  }
}
