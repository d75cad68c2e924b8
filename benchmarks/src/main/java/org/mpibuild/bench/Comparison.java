package org.mpibuild.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code make bench}: the main comparison. For each N it runs a {@link Bench} cold job and a warm job under
 * mpirun, then {@link BcastBench} at 4 and 2 ranks; then it writes a Markdown table, a chart, JSON with every
 * raw figure and the machine, and the {@code bench:} line. Every ratio is a median of per-repetition
 * ratios of cells measured side by side in the same job, with a distribution-free 95% interval.
 */
final class Comparison {
  record Mode(String name, List<Integer> ranks, int reps, String program, List<Integer> bcastSizes, int bcastReps) {}

  static final List<Integer> BCAST_SIZES = List.of(1 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20);
  static final Mode QUICK = new Mode("quick", List.of(1, 2, 4, 8, 16), 7, "matmul4", BCAST_SIZES, 15);
  static final Mode FULL = new Mode("full", List.of(1, 2, 4, 8, 16), 11, "matmul24", BCAST_SIZES, 21);

  /** The strategies as the tables and chart name them, with the cells' strategy ids. */
  static final Map<String, String> LABELS = labels();

  private static Map<String, String> labels() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("naive", "naive (every rank compiles)");
    m.put("lock", "OCCA <=1.1 (lock directory)");
    m.put("occa12", "OCCA >=1.2 (every rank compiles, atomic rename)");
    m.put("collective", "mpi-build, cold cache");
    m.put("limit", "limit (1 compile + raw bcast + load)");
    m.put("occa12-warm", "OCCA >=1.2, warm");
    m.put("collective-warm", "mpi-build, warm cache");
    return m;
  }

  /** The paired ratios of the {@code bench:} line: name, numerator, denominator, field. */
  record Ratio(String name, String over, String under, String field) {}

  static final List<Ratio> RATIOS = List.of(
      new Ratio("naive_over_collective", "naive", "collective", "ms"),
      new Ratio("lock_over_collective", "lock", "collective", "ms"),
      new Ratio("lock_long_over_collective", "lock-long", "collective", "ms"),
      new Ratio("occa12_over_collective", "occa12", "collective", "ms"),
      new Ratio("collective_over_limit", "collective", "limit", "ms"),
      new Ratio("warm_over_cold", "collective-warm", "collective", "ms"),
      new Ratio("occa12_warm_over_collective_warm", "occa12-warm", "collective-warm", "ms"),
      new Ratio("cpu_naive_over_cpu_collective", "naive", "collective", "cpu_s"));

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
        case "ranks" -> m = new Mode(m.name(), java.util.Arrays.stream(kv[1].split(",")).map(Integer::valueOf).toList(),
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
    return m;
  }

  static void run(Path repo, Path out, Mode mode) throws Exception {
    long started = System.nanoTime();
    Map<String, Object> machine = Machine.describe(repo);
    System.out.println("bench: mode " + mode.name() + ", ranks " + mode.ranks() + ", " + mode.reps()
        + " paired repetitions per cell after a dropped warm-up, program " + mode.program() + "; machine " + machine);
    List<Map<String, String>> cells = new ArrayList<>();
    for (int n : mode.ranks()) {
      Path work = Files.createTempDirectory(out, "work-" + n + "-");
      String salt = Long.toString(System.nanoTime());
      for (String phase : List.of("cold", "warm")) {
        Path jsonl = out.resolve("cells-" + n + "-" + phase + ".jsonl");
        BenchReport.run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", Integer.toString(n), "-cp",
            System.getProperty("java.class.path"), "org.mpibuild.bench.Bench", jsonl.toString(), phase,
            Integer.toString(mode.reps()), mode.program()),
            Map.of("MPI_BUILD_BENCH_DIR", work.toString(), "MPI_BUILD_BENCH_RUN", salt,
                "MPI_BUILD_JAVA_OPTS", "-XX:+UseSerialGC -Xmx1g"), 3600);
        cells.addAll(BenchJson.readLines(Files.readString(jsonl)));
      }
      BenchReport.deleteTree(work);
    }
    List<Map<String, String>> bcasts = new ArrayList<>();
    for (int n : List.of(4, 2)) {
      Path jsonl = out.resolve("bcast-" + n + ".jsonl");
      BenchReport.run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", Integer.toString(n), "-cp",
          System.getProperty("java.class.path"), "org.mpibuild.bench.BcastBench", jsonl.toString(),
          Integer.toString(mode.bcastReps()), join(mode.bcastSizes())),
          Map.of("MPI_BUILD_JAVA_OPTS", "-XX:+UseSerialGC -Xmx1g -XX:MaxDirectMemorySize=6g"), 1800);
      bcasts.addAll(BenchJson.readLines(Files.readString(jsonl)));
    }
    int cores = ((Number) machine.get("cores")).intValue();
    String md = markdown(mode, cells, bcasts, cores);
    Map<String, Object> line = lineFigures(mode, cells, bcasts);
    String benchLine = benchLine(mode, line);
    Files.writeString(out.resolve("results.md"), md + "\n" + benchLine + "\n");
    Chart.write(mode, cells, machine, out.resolve("time-to-ready.png"));
    List<Object> typedCells = new ArrayList<>();
    cells.forEach(c -> typedCells.add(BenchJson.typed(c)));
    List<Object> typedBcasts = new ArrayList<>();
    bcasts.forEach(b -> typedBcasts.add(BenchJson.typed(b)));
    Files.writeString(out.resolve("results.json"), BenchJson.pretty(BenchJson.object("mode", mode.name(),
        "program", mode.program(), "reps", mode.reps(), "machine", machine, "bench", line, "cells", typedCells,
        "broadcast", typedBcasts)));
    System.out.println();
    System.out.println(md);
    System.out.printf(Locale.ROOT, "bench: wrote %s, %s and %s in %.1f min%n", out.resolve("results.md"),
        out.resolve("time-to-ready.png"), out.resolve("results.json"), (System.nanoTime() - started) / 6e10);
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
    rows.sort(java.util.Comparator.comparingInt(c -> Integer.parseInt(c.get("rep"))));
    List<Double> out = new ArrayList<>();
    rows.forEach(r -> out.add(Double.parseDouble(r.get(field))));
    return out;
  }

  /** The paired per-repetition ratios of {@code r} at N. */
  static List<Double> ratios(List<Map<String, String>> cells, int n, Ratio r) {
    return Stats.ratios(series(cells, n, r.over(), r.field()), series(cells, n, r.under(), r.field()));
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
      out.put(r.name(), summary(ratios(cells, n, r)));
    }
    out.put("lock_long_compiles", summary(series(cells, n, "lock-long", "compiles")));
    for (int bytes : LINE_SIZES) {
      List<Map<String, String>> rows = bcastRows(bcasts, 4, bytes);
      out.put("envelope_over_raw_" + human(bytes), summary(Stats.ratios(column(rows, "envelope_us"),
          column(rows, "java_direct_us"))));
    }
    return out;
  }

  @SuppressWarnings("unchecked")
  static String benchLine(Mode mode, Map<String, Object> figures) {
    StringBuilder sb = new StringBuilder("bench: ranks=" + figures.get("ranks") + " reps=" + mode.reps());
    figures.forEach((k, v) -> {
      if (v instanceof Map<?, ?> m) {
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

  /** "1.23 [1.10-1.40]": the median of paired ratios and its 95% interval. */
  static String ratioCell(List<Double> xs) {
    Stats.Interval i = Stats.medianInterval(xs, 0.95);
    return fmt(Stats.median(xs)) + " [" + fmt(i.low()) + "-" + fmt(i.high()) + "]";
  }

  static String markdown(Mode mode, List<Map<String, String>> cells, List<Map<String, String>> bcasts, int cores) {
    StringBuilder sb = new StringBuilder();
    sb.append("Time until every rank holds a ready kernel (built, loaded, every kernel launched once and finished), "
        + "program `").append(mode.program()).append("`: median ms [min-max] over ").append(mode.reps())
        .append(" repetitions; compiles summed over ranks. Runs with N > ").append(cores)
        .append(" cores are oversubscribed.\n\n| N | cores |");
    LABELS.values().forEach(l -> sb.append(' ').append(l).append(" |"));
    sb.append("\n|---|---|");
    LABELS.keySet().forEach(s -> sb.append("---|"));
    sb.append('\n');
    for (int n : mode.ranks()) {
      sb.append("| ").append(n).append(" | ").append(n <= cores ? "a core per rank" : "oversubscribed").append(" |");
      for (String s : LABELS.keySet()) {
        List<Double> ms = series(cells, n, s, "ms");
        sb.append(' ').append(fmt(Stats.median(ms))).append(" [").append(fmt(Stats.min(ms))).append('-')
            .append(fmt(Stats.max(ms))).append("]; ").append(fmt(Stats.median(series(cells, n, s, "compiles"))))
            .append(" |");
      }
      sb.append('\n');
    }
    sb.append("\nCPU-seconds summed over ranks (median), and shared-directory file operations (median)\n\n| N |");
    LABELS.values().forEach(l -> sb.append(' ').append(l).append(" |"));
    sb.append("\n|---|");
    LABELS.keySet().forEach(s -> sb.append("---|"));
    sb.append('\n');
    for (int n : mode.ranks()) {
      sb.append("| ").append(n).append(" |");
      for (String s : LABELS.keySet()) {
        sb.append(' ').append(fmt(Stats.median(series(cells, n, s, "cpu_s")))).append(" s; ")
            .append(fmt(Stats.median(series(cells, n, s, "fsops")))).append(" |");
      }
      sb.append('\n');
    }
    sb.append("\nPaired ratios: the median of the per-repetition ratios, [95% interval of that median]\n\n| N |");
    RATIOS.forEach(r -> sb.append(' ').append(r.name()).append(" |"));
    sb.append(" lock-long compiles | lock-long stale / poll ms |\n|---|");
    RATIOS.forEach(r -> sb.append("---|"));
    sb.append("---|---|\n");
    for (int n : mode.ranks()) {
      sb.append("| ").append(n).append(" |");
      RATIOS.forEach(r -> sb.append(' ').append(ratioCell(ratios(cells, n, r))).append(" |"));
      sb.append(' ').append(fmt(Stats.median(series(cells, n, "lock-long", "compiles")))).append(" | ")
          .append(fmt(Stats.median(series(cells, n, "lock-long", "stale_ms")))).append(" / ")
          .append(fmt(Stats.median(series(cells, n, "lock-long", "poll_ms")))).append(" (compile ")
          .append(fmt(Stats.median(series(cells, n, "lock-long", "compile_ms")))).append(" ms) |\n");
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
