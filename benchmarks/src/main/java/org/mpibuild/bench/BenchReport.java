package org.mpibuild.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * {@code make bench}: runs {@link Bench} under mpirun at each N, the plain C {@code MPI_Bcast} beside it,
 * and {@link BcastBench}; then writes a Markdown table, a PNG chart, JSON with every raw figure, and the
 * {@code bench:} line, all from medians measured side by side in this one run.
 *
 * <p>usage: BenchReport REPO_DIR quick|full
 */
public final class BenchReport {

  record Mode(String name, List<Integer> ranks, int reps, String small, String big, String longProgram,
      long staleMillis, long longStaleMillis, int longReps, List<Integer> bcastSizes, int bcastRanks, int bcastReps) {}

  static final Mode QUICK = new Mode("quick", List.of(1, 2, 4, 8, 16), 3, null, "matmul4", "matmul4", 20_000,
      1_500, 2, List.of(1 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20), 4, 3);
  static final Mode FULL = new Mode("full", List.of(1, 2, 4, 8, 16), 5, "saxpy", "matmul24", "matmul48", 20_000,
      20_000, 3, List.of(1 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20), 4, 11);

  private BenchReport() {}

  public static void main(String[] args) throws Exception {
    Path repo = Path.of(args[0]).toAbsolutePath();
    Path out = repo.resolve("benchmarks/target/bench");
    Files.createDirectories(out);
    if (args.length > 1 && args[1].equals("ffm")) {
      ffm(repo, out, 5);
      return;
    }
    if (args.length > 1 && args[1].equals("signing")) {
      SigningBench.run(out, 9);
      return;
    }
    if (args.length > 1 && args[1].equals("stream")) {
      stream(repo, out, 5);
      return;
    }
    if (args.length > 1 && args[1].equals("batch")) {
      batch(repo, out, BATCH_KERNELS, BATCH_REPS);
      return;
    }
    Mode mode = args.length > 1 && args[1].equals("full") ? FULL : QUICK;
    long started = System.nanoTime();
    System.out.println("bench: mode " + mode.name() + ", ranks " + mode.ranks() + ", " + mode.reps()
        + " repetitions per cell, programs " + (mode.small() == null ? "" : mode.small() + ", ") + mode.big()
        + ", long: " + mode.longProgram());
    if (mode == QUICK) {
      System.out.println("bench: quick mode builds matmul4 (4 kernels, about 3 s with PoCL) instead of full mode's"
          + " saxpy, matmul24 and matmul48 (about 23 s), to stay within 10 minutes");
    }
    if (mode == QUICK) {
      System.out.println("bench: quick mode scales the lock's stale age for the long case down from 20 s to "
          + mode.longStaleMillis() + " ms, below the " + mode.longProgram() + " compile, so that the compile outlasts it"
          + " as it does for a 48-kernel program against 20 s; the other lock cells use OCCA's 20 s");
    }
    Path bcast = out.resolve("bcast");
    run(List.of("mpicc", "-O2", "-o", bcast.toString(), repo.resolve("benchmarks/src/main/c/bcast.c").toString()),
        Map.of(), 120);

    List<Map<String, String>> cells = new ArrayList<>();
    for (int n : mode.ranks()) {
      Path work = Files.createTempDirectory(out, "work-" + n + "-");
      Path jsonl = out.resolve("cells-" + n + ".jsonl");
      run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", Integer.toString(n), "-cp", System.getProperty("java.class.path"),
          "org.mpibuild.bench.Bench", jsonl.toString(), Integer.toString(mode.reps()), Long.toString(mode.staleMillis()),
          mode.small() == null ? mode.big() : mode.small() + "," + mode.big(), mode.longProgram(), Long.toString(mode.longStaleMillis()),
          Integer.toString(mode.longReps())),
          Map.of("MPI_BUILD_BENCH_DIR", work.toString(), "MPI_BUILD_BENCH_RUN", Long.toString(System.nanoTime()),
              "MPI_BUILD_JAVA_OPTS", "-XX:+UseSerialGC -Xmx1g"), 3600);
      cells.addAll(parse(Files.readString(jsonl)));
      deleteTree(work);
    }
    // The limit: one compile, a plain C MPI_Bcast of the same bytes at the same N, one load.
    Map<String, Double> cBcastUs = new TreeMap<>();
    for (Map<String, String> c : new ArrayList<>(cells)) {
      if (c.get("strategy").equals("limit")) {
        String key = c.get("n") + "/" + c.get("binary_bytes");
        if (!cBcastUs.containsKey(key)) {
          cBcastUs.put(key, cBcast(bcast, Integer.parseInt(c.get("n")), Long.parseLong(c.get("binary_bytes")), 21));
        }
        double ms = Double.parseDouble(c.get("compile_ms")) + cBcastUs.get(key) / 1000 + Double.parseDouble(c.get("load_ms"));
        c.put("ms", String.format(Locale.ROOT, "%.3f", ms));
        c.put("c_bcast_us", String.format(Locale.ROOT, "%.1f", cBcastUs.get(key)));
      }
    }
    // The broadcast cost.
    Path bjsonl = out.resolve("bcast.jsonl");
    StringBuilder sizes = new StringBuilder();
    for (int s : mode.bcastSizes()) {
      sizes.append(sizes.length() == 0 ? "" : ",").append(s);
    }
    run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", Integer.toString(mode.bcastRanks()), "-cp", System.getProperty("java.class.path"),
        "org.mpibuild.bench.BcastBench", bjsonl.toString(), Integer.toString(mode.bcastReps()), sizes.toString()),
        Map.of("MPI_BUILD_JAVA_OPTS", "-XX:+UseSerialGC -Xmx1g -XX:MaxDirectMemorySize=6g"), 1800);
    List<Map<String, String>> bcasts = parse(Files.readString(bjsonl));
    Map<Integer, Double> cBySize = new TreeMap<>();
    for (int s : mode.bcastSizes()) {
      cBySize.put(s, cBcast(bcast, mode.bcastRanks(), s, mode.bcastReps()));
    }

    String md = markdown(mode, cells, bcasts, cBySize);
    Files.writeString(out.resolve("results.md"), md);
    chart(mode, cells, out.resolve("time-to-ready.png"));
    Files.writeString(out.resolve("results.json"), json(mode, cells, bcasts, cBySize));
    System.out.println();
    System.out.println(md);
    System.out.printf(Locale.ROOT, "bench: wrote %s, %s and %s in %.1f min%n", out.resolve("results.md"),
        out.resolve("time-to-ready.png"), out.resolve("results.json"), (System.nanoTime() - started) / 6e10);
    System.out.println(benchLine(mode, cells));
  }

  /** The batch build: K cold kernels, each repetition on 1 rank and then on 2, side by side. */
  static final int BATCH_KERNELS = 32;
  static final int BATCH_REPS = 5;

  /**
   * Times {@code mpiBuildKernels} of K kernels that no cache holds (the library's cache off, a fresh PoCL
   * cache per job, a salt in every kernel's options) on 1 rank and on 2, from a barrier until every rank
   * holds every kernel (the slowest rank's time). Beside them, the machine's own ceiling: two independent
   * single-rank jobs of K/2 kernels each, started together, one pinned to each core (the slower one's
   * time). Every compiling process pays the compiler's one-time start-up, and two compiles at once run a
   * little slower than one, so 2 ranks cannot beat that ceiling. Repetitions alternate the three, so that
   * the machine's drift hits all alike; the figures are medians of the per-repetition ratios.
   */
  static void batch(Path repo, Path out, int k, int reps) throws Exception {
    List<Map<String, String>> rows = new ArrayList<>();
    List<Double> ratios = new ArrayList<>();
    List<Double> ceilings = new ArrayList<>();
    for (int rep = 0; rep < reps; rep++) {
      double one = batchJob(repo, 1, k, -1);
      double two = batchJob(repo, 2, k, -1);
      java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(2);
      java.util.concurrent.Future<Double> a = pool.submit(() -> batchJob(repo, 1, k / 2, 0));
      java.util.concurrent.Future<Double> b = pool.submit(() -> batchJob(repo, 1, k - k / 2, 1));
      double independent = Math.max(a.get(), b.get());
      pool.shutdown();
      rows.add(Map.of("rep", Integer.toString(rep), "kernels", Integer.toString(k),
          "one_rank_s", fmt(one), "two_ranks_s", fmt(two), "two_independent_halves_s", fmt(independent)));
      ratios.add(one / two);
      ceilings.add(one / independent);
      System.out.printf(Locale.ROOT, "bench batch: repetition %d: 1 rank %.3f s, 2 ranks %.3f s, two independent "
          + "halves %.3f s%n", rep + 1, one, two, independent);
    }
    double median = medianOf(ratios);
    double ceiling = medianOf(ceilings);
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
        + "machine_ceiling=%.2f batch_over_ceiling=%.2f", k, reps, median, java.util.Collections.min(ratios),
        java.util.Collections.max(ratios), ceiling, median / ceiling);
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
      String output = run(cmd, Map.of(), 900);
      Matcher m = Pattern.compile("RESULT mode=batch rank=0 .*ok=true .*batch_seconds=([0-9.]+)").matcher(output);
      if (!m.find()) {
        throw new IllegalStateException("the batch build on " + n + " rank(s) printed no time:\n" + output);
      }
      return Double.parseDouble(m.group(1));
    } finally {
      deleteTree(pocl);
    }
  }

  /**
   * Stream-ordered messages against the manual pattern (finish the queue, then send; receive, then write
   * with a blocking call): a ping-pong of 50 rounds with kernels of random length on 2 ranks, alternating,
   * {@code reps} times each. Reports the time until the last message arrived and until the host was free.
   */
  static void stream(Path repo, Path out, int reps) throws Exception {
    Pattern result = Pattern.compile("correct=true seconds=([0-9.]+) host_seconds=([0-9.]+)");
    Map<String, List<Double>> total = new TreeMap<>();
    Map<String, List<Double>> host = new TreeMap<>();
    for (int rep = 0; rep < reps; rep++) {
      for (String mode : List.of("ordered", "manual")) {
        String output = run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", "2", "-cp", System.getProperty("java.class.path"),
            "org.mpibuild.programs.Pipeline", mode, "50", "20000", Integer.toString(rep)), Map.of("MPI_BUILD_CACHE", "off"),
            600);
        Matcher m = result.matcher(output);
        if (!m.find()) {
          throw new IllegalStateException("Pipeline " + mode + " printed no correct result:\n" + output);
        }
        total.computeIfAbsent(mode, x -> new ArrayList<>()).add(Double.parseDouble(m.group(1)));
        host.computeIfAbsent(mode, x -> new ArrayList<>()).add(Double.parseDouble(m.group(2)));
        System.out.printf(Locale.ROOT, "bench stream: repetition %d, %s: %s s, host free after %s s%n", rep + 1, mode,
            m.group(1), m.group(2));
      }
    }
    String line = String.format(Locale.ROOT, "bench: stream rounds=50 ranks=2 reps=%d ordered_s=%.3f manual_s=%.3f "
        + "ordered_over_manual=%.2f host_busy_ordered_s=%.3f host_busy_manual_s=%.3f", reps,
        medianOf(total.get("ordered")), medianOf(total.get("manual")),
        medianOf(total.get("ordered")) / medianOf(total.get("manual")), medianOf(host.get("ordered")),
        medianOf(host.get("manual")));
    Files.writeString(out.resolve("stream.txt"), line + "\n" + total + "\n" + host + "\n");
    System.out.println(line);
  }

  /**
   * The FFM binding's broadcast against a plain C {@code MPI_Bcast} of the same bytes (Open MPI, 2 ranks),
   * 1 MiB to 64 MiB, alternating, {@code reps} jobs of each, 51 broadcasts per job; medians of medians.
   */
  static void ffm(Path repo, Path out, int reps) throws Exception {
    Path bcast = out.resolve("bcast");
    run(List.of("mpicc", "-O2", "-o", bcast.toString(), repo.resolve("benchmarks/src/main/c/bcast.c").toString()),
        Map.of(), 120);
    Pattern median = Pattern.compile("median_us=([0-9.]+)");
    StringBuilder md = new StringBuilder("| payload | C MPI_Bcast (us) | FFM binding (us) | FFM / C |\n|---|---|---|---|\n");
    StringBuilder line = new StringBuilder("bench: ffm ranks=2");
    for (int bytes : List.of(1 << 20, 16 << 20, 64 << 20)) {
      List<Double> c = new ArrayList<>();
      List<Double> f = new ArrayList<>();
      for (int rep = 0; rep < reps; rep++) {
        Matcher mc = median.matcher(run(List.of("mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
            bcast.toString(), Integer.toString(bytes), "51"), Map.of(), 600));
        mc.find();
        c.add(Double.parseDouble(mc.group(1)));
        Matcher mf = median.matcher(run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", "2", "-cp", System.getProperty("java.class.path"),
            "org.mpibuild.bench.FfmBcastBench", Integer.toString(bytes), "51"),
            Map.of("MPI_BUILD_JAVA", "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java", "MPI_BUILD_BINDING", "ffm",
                "JAVA_TOOL_OPTIONS", "--enable-native-access=ALL-UNNAMED",
                "MPI_BUILD_JAVA_OPTS", "-XX:+UseSerialGC -Xmx1g -XX:MaxDirectMemorySize=2g"), 600));
        mf.find();
        f.add(Double.parseDouble(mf.group(1)));
      }
      double cm = medianOf(c);
      double fm = medianOf(f);
      md.append(String.format(Locale.ROOT, "| %s | %.0f | %.0f | %.3f |%n", human(bytes), cm, fm, fm / cm));
      line.append(String.format(Locale.ROOT, " ffm_over_c_%s=%.3f", human(bytes).replace(" ", ""), fm / cm));
      System.out.printf(Locale.ROOT, "bench ffm: %s: C %s us, FFM %s us%n", human(bytes), c, f);
    }
    md.append('\n').append(line).append('\n');
    Files.writeString(out.resolve("ffm.md"), md);
    System.out.println(md);
  }

  static String fmt(double seconds) {
    return String.format(Locale.ROOT, "%.3f", seconds);
  }

  static double medianOf(List<Double> xs) {
    return Stats.median(xs);
  }

  static String benchLine(Mode mode, List<Map<String, String>> cells) {
    int n = mode.ranks().get(mode.ranks().size() - 1);
    double cold = median(cells, n, mode.big(), "collective-cold", "ms");
    double naive = median(cells, n, mode.big(), "naive", "ms");
    double lock = median(cells, n, mode.big(), "lock", "ms");
    double lockLong = median(cells, n, mode.longProgram(), "lock-long", "ms");
    double collLong = median(cells, n, mode.longProgram(), "collective-long", "ms");
    double lockCompilesLong = median(cells, n, mode.longProgram(), "lock-long", "compiles");
    double fsLock = median(cells, n, mode.big(), "lock", "fsops");
    double fsColl = median(cells, n, mode.big(), "collective-cold", "fsops");
    double limit = median(cells, n, mode.big(), "limit", "ms");
    double warm = median(cells, n, mode.big(), "collective-warm", "ms");
    return String.format(Locale.ROOT, "bench: ranks=%d naive_over_collective=%.2f lock_over_collective=%.2f "
        + "lock_over_collective_long=%.2f lock_compiles_long=%.0f fsops_lock_over_collective=%.2f "
        + "collective_over_limit=%.2f warm_over_cold=%.3f", n, naive / cold, lock / cold, lockLong / collLong,
        lockCompilesLong, fsLock / fsColl, cold / limit, warm / cold);
  }

  static final List<String> STRATEGIES = List.of("naive", "lock", "collective-cold", "collective-warm", "limit");

  static String markdown(Mode mode, List<Map<String, String>> cells, List<Map<String, String>> bcasts,
      Map<Integer, Double> cBySize) {
    StringBuilder sb = new StringBuilder();
    for (String program : mode.small() == null ? List.of(mode.big()) : List.of(mode.small(), mode.big())) {
      sb.append("Time until every rank holds a ready kernel, program `").append(program)
          .append("` (median ms over ").append(mode.reps()).append(" runs, [min-max]; compiles; shared-directory file operations)\n\n");
      sb.append("| N |");
      STRATEGIES.forEach(s -> sb.append(' ').append(s).append(" |"));
      sb.append("\n|---|");
      STRATEGIES.forEach(s -> sb.append("---|"));
      sb.append('\n');
      for (int n : mode.ranks()) {
        sb.append("| ").append(n).append(" |");
        for (String s : STRATEGIES) {
          sb.append(String.format(Locale.ROOT, " %.0f [%.0f-%.0f]; %.0f; %.0f |", median(cells, n, program, s, "ms"),
              min(cells, n, program, s, "ms"), max(cells, n, program, s, "ms"), median(cells, n, program, s, "compiles"),
              median(cells, n, program, s, "fsops")));
        }
        sb.append('\n');
      }
      sb.append('\n');
    }
    sb.append("Compile outlasting the lock's stale age, program `").append(mode.longProgram()).append("`, stale age ")
        .append(mode.longStaleMillis()).append(" ms (median ms over ").append(mode.longReps())
        .append(" runs; compiles)\n\n| N | lock | collective-cold |\n|---|---|---|\n");
    for (int n : mode.ranks()) {
      sb.append(String.format(Locale.ROOT, "| %d | %.0f; %.0f | %.0f; %.0f |%n", n,
          median(cells, n, mode.longProgram(), "lock-long", "ms"), median(cells, n, mode.longProgram(), "lock-long", "compiles"),
          median(cells, n, mode.longProgram(), "collective-long", "ms"),
          median(cells, n, mode.longProgram(), "collective-long", "compiles")));
    }
    sb.append("\nBroadcast cost at ").append(mode.bcastRanks()).append(" ranks (median us of ").append(mode.bcastReps())
        .append(" runs, slowest rank)\n\n| payload | C MPI_Bcast | Java direct buffer | mpi-build envelope (with SHA-256 check) | envelope / C |\n|---|---|---|---|---|\n");
    for (Map.Entry<Integer, Double> e : cBySize.entrySet()) {
      double java = medianOf(bcasts, e.getKey(), "java_direct_us");
      double env = medianOf(bcasts, e.getKey(), "envelope_us");
      sb.append(String.format(Locale.ROOT, "| %s | %.0f | %.0f | %.0f | %.2f |%n", human(e.getKey()), e.getValue(), java,
          env, env / e.getValue()));
    }
    return sb.toString();
  }

  static void chart(Mode mode, List<Map<String, String>> cells, Path png) throws IOException {
    XYSeriesCollection data = new XYSeriesCollection();
    for (String s : STRATEGIES) {
      XYSeries series = new XYSeries(s);
      for (int n : mode.ranks()) {
        series.add(n, Math.max(1, median(cells, n, mode.big(), s, "ms")));
      }
      data.addSeries(series);
    }
    JFreeChart chart = ChartFactory.createXYLineChart("Time until every rank holds a ready kernel (" + mode.big()
        + ", PoCL, 2 cores)", "ranks (N)", "ms (median)", data, PlotOrientation.VERTICAL, true, false, false);
    XYPlot plot = chart.getXYPlot();
    LogAxis y = new LogAxis("ms (median, log scale)");
    y.setBase(10);
    y.setSmallestValue(1);
    y.setNumberFormatOverride(new java.text.DecimalFormat("#,##0"));
    plot.setRangeAxis(y);
    LogAxis x = new LogAxis("ranks (N), log scale");
    x.setBase(2);
    x.setNumberFormatOverride(new java.text.DecimalFormat("0"));
    plot.setDomainAxis(x);
    plot.setBackgroundPaint(Color.WHITE);
    plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
    plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
    XYLineAndShapeRenderer r = new XYLineAndShapeRenderer(true, true);
    Color[] colors = {new Color(0xd62728), new Color(0x1f77b4), new Color(0x2ca02c), new Color(0x9467bd),
        new Color(0x7f7f7f)};
    for (int i = 0; i < STRATEGIES.size(); i++) {
      r.setSeriesStroke(i, new BasicStroke(2f));
      r.setSeriesPaint(i, colors[i]);
    }
    plot.setRenderer(r);
    ChartUtils.saveChartAsPNG(png.toFile(), chart, 900, 560);
  }

  static String json(Mode mode, List<Map<String, String>> cells, List<Map<String, String>> bcasts,
      Map<Integer, Double> cBySize) {
    List<Object> broadcast = new ArrayList<>();
    bcasts.forEach(b -> broadcast.add(BenchJson.typed(b)));
    cBySize.forEach((bytes, us) -> broadcast.add(BenchJson.object("bytes", bytes, "c_mpi_bcast_median_us",
        BenchJson.round(us, 1))));
    List<Object> typedCells = new ArrayList<>();
    cells.forEach(c -> typedCells.add(BenchJson.typed(c)));
    return BenchJson.pretty(BenchJson.object("mode", mode.name(), "cells", typedCells, "broadcast", broadcast));
  }

  static List<Map<String, String>> parse(String jsonl) {
    return BenchJson.readLines(jsonl);
  }


  static List<Double> values(List<Map<String, String>> cells, int n, String program, String strategy, String field) {
    List<Double> v = new ArrayList<>();
    for (Map<String, String> c : cells) {
      if (c.get("n").equals(Integer.toString(n)) && c.get("program").equals(program) && c.get("strategy").equals(strategy)) {
        v.add(Double.parseDouble(c.get(field)));
      }
    }
    v.sort(null);
    return v;
  }

  static double median(List<Map<String, String>> cells, int n, String program, String strategy, String field) {
    List<Double> v = values(cells, n, program, strategy, field);
    return v.isEmpty() ? Double.NaN : Stats.median(v);
  }

  static double min(List<Map<String, String>> cells, int n, String program, String strategy, String field) {
    List<Double> v = values(cells, n, program, strategy, field);
    return v.isEmpty() ? Double.NaN : v.get(0);
  }

  static double max(List<Map<String, String>> cells, int n, String program, String strategy, String field) {
    List<Double> v = values(cells, n, program, strategy, field);
    return v.isEmpty() ? Double.NaN : v.get(v.size() - 1);
  }

  static double medianOf(List<Map<String, String>> rows, int bytes, String field) {
    List<Double> v = new ArrayList<>();
    for (Map<String, String> r : rows) {
      if (r.get("bytes").equals(Integer.toString(bytes))) {
        v.add(Double.parseDouble(r.get(field)));
      }
    }
    return v.isEmpty() ? Double.NaN : Stats.median(v);
  }

  static double cBcast(Path exe, int n, long bytes, int reps) throws Exception {
    String out = run(List.of("mpirun", "--allow-run-as-root", "--oversubscribe", "-np", Integer.toString(n),
        exe.toString(), Long.toString(bytes), Integer.toString(reps)), Map.of(), 600);
    Matcher m = Pattern.compile("median_us=([0-9.]+)").matcher(out);
    if (!m.find()) {
      throw new IllegalStateException("the C broadcast printed no median:\n" + out);
    }
    return Double.parseDouble(m.group(1));
  }

  /** Runs a command, echoing its output, and returns it; fails on a non-zero exit or a timeout. */
  static String run(List<String> cmd, Map<String, String> env, long timeoutSeconds) throws Exception {
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().putAll(env);
    Process p = pb.start();
    StringBuilder all = new StringBuilder();
    Thread pump = new Thread(() -> {
      try (var r = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          all.append(line).append('\n');
          if (line.startsWith("bench ")) {
            System.out.println(line);
          }
        }
      } catch (IOException e) {
        // the process ended
      }
    });
    pump.start();
    if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      throw new IllegalStateException(String.join(" ", cmd) + " did not finish in " + timeoutSeconds + " s");
    }
    pump.join();
    if (p.exitValue() != 0) {
      throw new IllegalStateException(String.join(" ", cmd) + " failed with exit status " + p.exitValue() + ":\n" + all);
    }
    return all.toString();
  }

  static String human(long bytes) {
    return org.mpibuild.spi.Setting.formatSize(bytes);
  }

  static void deleteTree(Path dir) throws IOException {
    org.mpibuild.spi.BackendSupport.deleteTree(dir);
  }
}
