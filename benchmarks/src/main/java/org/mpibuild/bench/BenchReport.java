package org.mpibuild.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The benchmarks behind {@code make bench}: the main comparison ({@link Comparison}), the batch build, the
 * stream-ordered messages, the FFM binding's broadcast and the cost of signed cache entries.
 *
 * <p>usage: BenchReport REPO_DIR quick|full|batch|stream|allreduce|ffm|ffm-abi|signing|generic [ranks=1,2,4] [reps=N] [program=NAME]
 * (generic: [reps=N] [n=ORDER] [program=NAME]; allreduce: [reps=N] [sizes=ITERATIONS:BYTES,...] [bindings=mpijava,ffm], see
 * {@link AllReduceBench})
 */
public final class BenchReport {

  private BenchReport() {}

  public static void main(String[] args) throws Exception {
    Path repo = Path.of(args[0]).toAbsolutePath();
    // MPI_BUILD_BENCH_OUT: another folder for the results (make bench-main-trixie keeps bookworm's apart).
    String elsewhere = System.getenv("MPI_BUILD_BENCH_OUT");
    Path out = elsewhere != null && !elsewhere.isBlank() ? Path.of(elsewhere).toAbsolutePath()
        : repo.resolve("benchmarks/target/bench");
    Files.createDirectories(out);
    if (args.length > 1 && args[1].equals("ffm")) {
      ffm(repo, out, 5, ffmJava(repo));
      return;
    }
    if (args.length > 1 && args[1].equals("ffm-abi")) {
      FfmAbiReport.run(repo, out, 7);
      return;
    }
    if (args.length > 1 && args[1].equals("signing")) {
      SigningBench.run(out, 9);
      return;
    }
    if (args.length > 1 && args[1].equals("stream")) {
      stream(repo, out, 7);
      return;
    }
    if (args.length > 1 && args[1].equals("allreduce")) {
      Map<String, String> kv = new TreeMap<>(Map.of("reps", Integer.toString(AllReduceBench.DEFAULT_REPS),
          "sizes", AllReduceBench.DEFAULT_SIZES, "bindings", "mpijava,ffm"));
      for (String a : Arrays.asList(args).subList(2, args.length)) {
        String[] p = a.split("=", 2);
        if (p.length != 2 || !kv.containsKey(p[0])) {
          throw new IllegalArgumentException("allreduce takes reps=N, sizes=ITERATIONS:BYTES,... and "
              + "bindings=mpijava,ffm, not '" + a + "'");
        }
        kv.put(p[0], p[1]);
      }
      List<String> bindings = List.of(kv.get("bindings").split(","));
      bindings.forEach(AllReduceBench::label); // an unknown binding fails here, before any job
      AllReduceBench.run(repo, out, Integer.parseInt(kv.get("reps")), kv.get("sizes"), bindings);
      return;
    }
    if (args.length > 1 && args[1].equals("generic")) {
      Map<String, String> kv = new TreeMap<>(Map.of("reps", "8", "n", "512", "program", "matmul4"));
      for (String a : Arrays.asList(args).subList(2, args.length)) {
        String[] p = a.split("=", 2);
        if (p.length != 2 || !kv.containsKey(p[0])) {
          throw new IllegalArgumentException("generic takes reps=N, n=ORDER and program=NAME, not '" + a + "'");
        }
        kv.put(p[0], p[1]);
      }
      generic(repo, out, kv.get("program"), Integer.parseInt(kv.get("n")), Integer.parseInt(kv.get("reps")));
      return;
    }
    if (args.length > 1 && args[1].equals("fresh")) {
      FreshProcess.run(out, args.length > 2 ? args[2] : "matmul4", 8);
      return;
    }
    if (args.length > 1 && args[1].equals("batch")) {
      batch(repo, out, BATCH_KERNELS, BATCH_REPS);
      return;
    }
    Comparison.Mode mode = args.length > 1 && args[1].equals("full") ? Comparison.FULL : Comparison.QUICK;
    Comparison.run(repo, out, Comparison.override(mode, Arrays.asList(args).subList(Math.min(2, args.length),
        args.length)));
  }

  /**
   * What generic code costs. First the kernels' speed: {@link KernelSpeed} runs the program's kernels at matrix
   * order {@code n} in a process of its own with PoCL's defaults (specialized work-group functions) and in
   * one with {@code POCL_WORK_GROUP_SPECIALIZATION=0} (generic code), each with an empty PoCL cache, paired,
   * the order alternating; the figure is the median of the per-repetition ratios generic / specialized.
   * Then a receiver's cost of an unnamed shape: a {@link Bench} {@code shapes} job at 2 ranks, mpi-build
   * with the request's launch shapes named and without, paired and alternated; the receiver's load + first
   * launch of each. {@code reps} is rounded up to an even number, at least 7 (so at least 8).
   */
  static void generic(Path repo, Path out, String program, int n, int reps) throws Exception {
    int r = Stats.roundUpToMultiple(Math.max(7, reps), 2);
    if (r != reps) {
      System.out.println("bench generic: reps=" + reps + " rounded up to " + r + " (at least 7, a multiple of the 2 "
          + "variants so that each order occurs equally often)");
    }
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
          String output = run(List.of("java", "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"),
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
          deleteTree(pocl);
        }
      }
    }
    List<Double> ratio = Stats.ratios(speed.get("generic"), speed.get("specialized"));

    Path work = Files.createTempDirectory(out, "work-shapes-");
    Path jsonl = out.resolve("cells-2-shapes.jsonl");
    run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", "2", "-cp", System.getProperty("java.class.path"),
        "org.mpibuild.bench.Bench", jsonl.toString(), "shapes", Integer.toString(r), program),
        Map.of("MPI_BUILD_BENCH_DIR", work.toString(), "MPI_BUILD_BENCH_RUN", Long.toString(System.nanoTime()),
            "MPI_BUILD_JAVA_OPTS", "-XX:+UseSerialGC -Xmx1g"), 3600);
    deleteTree(work);
    List<Map<String, String>> cells = BenchJson.readLines(Files.readString(jsonl));
    List<Double> named = Comparison.series(cells, 2, "collective", "receiver_ready_ms");
    List<Double> unnamed = Comparison.series(cells, 2, "collective-unshaped", "receiver_ready_ms");
    List<Double> namedCompile = Comparison.series(cells, 2, "collective", "compile_ms");
    List<Double> unnamedCompile = Comparison.series(cells, 2, "collective-unshaped", "compile_ms");

    Map<String, Object> figures = BenchJson.object("program", program, "n", n, "reps", r,
        "generic_over_specialized", Comparison.summary(ratio),
        "specialized_ms", Comparison.summary(speed.get("specialized")), "generic_ms", Comparison.summary(speed.get("generic")),
        "receiver_load_launch_named_ms", Comparison.summary(named),
        "receiver_load_launch_unnamed_ms", Comparison.summary(unnamed),
        "root_compile_named_ms", Comparison.summary(namedCompile),
        "root_compile_unnamed_ms", Comparison.summary(unnamedCompile));
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
        .append("| receiver load + first launch | ").append(Comparison.ratioCell(named)).append(" | ")
        .append(Comparison.ratioCell(unnamed)).append(" |\n")
        .append("| root's compile (code generation included) | ").append(Comparison.ratioCell(namedCompile))
        .append(" | ").append(Comparison.ratioCell(unnamedCompile)).append(" |\n");
    md.append('\n').append(line).append('\n');
    Files.writeString(out.resolve("generic.md"), md);
    Files.writeString(out.resolve("generic.json"), BenchJson.pretty(BenchJson.object("figures", figures,
        "speed_ms", speed, "cells", cells.stream().map(BenchJson::typed).toList())));
    System.out.println();
    System.out.println(md);
    System.out.println(line);
  }

  /** "1.23[1.10-1.40]": a median and its 95% interval. */
  static String bracket(List<Double> xs) {
    Stats.Interval i = Stats.medianInterval(xs, 0.95);
    return String.format(Locale.ROOT, "%s[%s-%s]", BenchJson.round(Stats.median(xs), 3), BenchJson.round(i.low(), 3),
        BenchJson.round(i.high(), 3));
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
      ExecutorService pool = Executors.newFixedThreadPool(2);
      Future<Double> a = pool.submit(() -> batchJob(repo, 1, k / 2, 0));
      Future<Double> b = pool.submit(() -> batchJob(repo, 1, k - k / 2, 1));
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

  /** The measured rounds of the ping-pong ({@link #stream}). */
  static final int STREAM_ROUNDS = 50;
  /**
   * The rounds each loop of the ping-pong runs first, unmeasured, with the same messenger: the JIT compiles the
   * stream-ordered path at its first messages, on the cores the kernels run on.
   */
  static final int STREAM_WARMUP_ROUNDS = 5;
  /**
   * The rounds each loop of the ping-pong runs before its warm-up rounds, unmeasured, with delays 200 times shorter
   * (Pipeline's QUICK): with a message every 80 ms, the stream-ordered path would still be compiled by the JIT
   * during the measured rounds, on the kernels' cores.
   */
  static final int STREAM_QUICK_ROUNDS = 2000;

  /**
   * Stream-ordered messages against the manual pattern (finish the queue, then send; receive, then write
   * with a blocking call): a ping-pong of {@value #STREAM_ROUNDS} rounds with kernels of random length on 2 ranks,
   * {@code reps} repetitions. A repetition is one job that runs each mode twice, ordered, manual, manual, ordered or
   * its mirror, alternating from one repetition to the next, every loop after {@value #STREAM_QUICK_ROUNDS} quick
   * and {@value #STREAM_WARMUP_ROUNDS} ordinary unmeasured rounds and with the same random delays; its ratio
   * compares the modes' means. On the FFM binding's JDK with native access, where the messages run on the queue
   * itself ({@code run=} in the line). Reports the time until the last message arrived and until the host was
   * free, and the median of the per-repetition ratios.
   */
  static void stream(Path repo, Path out, int reps) throws Exception {
    Pattern run = Pattern.compile("RUN mode=ordered (.*)");
    Map<String, List<Double>> total = new TreeMap<>();
    Map<String, List<Double>> host = new TreeMap<>();
    Map<String, List<Double>> jit = new TreeMap<>();
    List<Double> ratios = new ArrayList<>();
    String where = "?";
    for (int rep = 0; rep < reps; rep++) {
      String modes = rep % 2 == 0 ? "ordered,manual,manual,ordered" : "manual,ordered,ordered,manual";
      String output = run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", "2", "-cp",
          System.getProperty("java.class.path"), "org.mpibuild.programs.Pipeline", modes,
          Integer.toString(STREAM_ROUNDS), "20000", Integer.toString(rep), Integer.toString(STREAM_WARMUP_ROUNDS),
          Integer.toString(STREAM_QUICK_ROUNDS)),
          Map.of("MPI_BUILD_CACHE", "off", "MPI_BUILD_JAVA", ffmJava(repo),
              "MPI_BUILD_JAVA_OPTS", "--enable-native-access=ALL-UNNAMED"), 900);
      Map<String, List<double[]>> loops = streamLoops(output, 2);
      Matcher r = run.matcher(output);
      if (r.find()) {
        where = r.group(1).trim();
      }
      for (Map.Entry<String, List<double[]>> e : loops.entrySet()) {
        for (double[] loop : e.getValue()) {
          System.out.printf(Locale.ROOT, "bench stream: repetition %d, %s: %.3f s, host free after %.3f s, JIT %.3f s%n",
              rep + 1, e.getKey(), loop[0], loop[1], loop[2]);
        }
        total.computeIfAbsent(e.getKey(), x -> new ArrayList<>()).add(meanOf(e.getValue(), 0));
        host.computeIfAbsent(e.getKey(), x -> new ArrayList<>()).add(meanOf(e.getValue(), 1));
        jit.computeIfAbsent(e.getKey(), x -> new ArrayList<>()).add(meanOf(e.getValue(), 2));
      }
      ratios.add(meanOf(loops.get("ordered"), 0) / meanOf(loops.get("manual"), 0));
    }
    Stats.Interval interval = Stats.intervalOrRange(ratios);
    String line = String.format(Locale.ROOT, "bench: stream rounds=%d warmup_rounds=%d quick_rounds=%d ranks=2 reps=%d "
        + "ordered_s=%.3f manual_s=%.3f ordered_over_manual=%.2f ordered_over_manual_low=%.2f "
        + "ordered_over_manual_high=%.2f host_busy_ordered_s=%.3f host_busy_manual_s=%.3f jit_ordered_s=%.3f "
        + "jit_manual_s=%.3f run=%s",
        STREAM_ROUNDS, STREAM_WARMUP_ROUNDS, STREAM_QUICK_ROUNDS, reps, medianOf(total.get("ordered")),
        medianOf(total.get("manual")),
        medianOf(ratios), interval.low(), interval.high(), medianOf(host.get("ordered")), medianOf(host.get("manual")),
        medianOf(jit.get("ordered")), medianOf(jit.get("manual")), where);
    Files.writeString(out.resolve("stream.txt"), line + "\n" + total + "\n" + host + "\n" + "jit " + jit + "\n"
        + "ratios " + ratios + "\n");
    System.out.println(line);
  }

  /**
   * The FFM binding's broadcast against a plain C {@code MPI_Bcast} of the same bytes (Open MPI, 2 ranks),
   * 1 MiB to 64 MiB, alternating, {@code reps} jobs of each, 51 broadcasts per job; medians of medians.
   */
  /** The JDK 22+ that provisioning found for the FFM binding ({@code -Dffm.jdk} in .mvn/maven.config). */
  static String ffmJava(Path repo) throws IOException {
    Path config = repo.resolve(".mvn/maven.config");
    Matcher m = Pattern.compile("-Dffm\\.jdk=(\\S+)").matcher(Files.exists(config) ? Files.readString(config) : "");
    if (!m.find()) {
      throw new IllegalStateException("no JDK 22+ for the FFM binding: scripts/provision found none (set MPI_BUILD_FFM_JDK)");
    }
    return m.group(1) + "/bin/java";
  }

  /** Builds {@code benchmarks/src/main/c/NAME.c} with {@code mpicc} into {@code out/NAME}; returns its path. */
  static Path buildC(Path repo, Path out, String name) throws Exception {
    Path program = out.resolve(name);
    run(List.of("mpicc", "-O2", "-o", program.toString(),
        repo.resolve("benchmarks/src/main/c/" + name + ".c").toString()), Map.of(), 120);
    return program;
  }

  /** Open MPI's {@code mpirun} starting {@code program} with {@code args} on 2 ranks of this machine. */
  static List<String> mpirunTwoRanks(Path program, String... args) {
    List<String> cmd = new ArrayList<>(List.of("mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
        program.toString()));
    cmd.addAll(List.of(args));
    return cmd;
  }

  static void ffm(Path repo, Path out, int reps, String java) throws Exception {
    Path bcast = buildC(repo, out, "bcast");
    Pattern median = Pattern.compile("median_us=([0-9.]+)");
    StringBuilder md = new StringBuilder("| payload | C MPI_Bcast (us) | FFM binding (us) | FFM / C |\n|---|---|---|---|\n");
    StringBuilder line = new StringBuilder("bench: ffm ranks=2");
    for (int bytes : List.of(1 << 20, 16 << 20, 64 << 20)) {
      List<Double> c = new ArrayList<>();
      List<Double> f = new ArrayList<>();
      for (int rep = 0; rep < reps; rep++) {
        Matcher mc = median.matcher(run(mpirunTwoRanks(bcast, Integer.toString(bytes), "51"), Map.of(), 600));
        mc.find();
        c.add(Double.parseDouble(mc.group(1)));
        Matcher mf = median.matcher(run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", "2", "-cp", System.getProperty("java.class.path"),
            "org.mpibuild.bench.FfmBcastBench", Integer.toString(bytes), "51"),
            Map.of("MPI_BUILD_JAVA", java, "MPI_BUILD_BINDING", "ffm",
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

  private static final Pattern STREAM_RESULT = Pattern.compile("RESULT mode=(ordered|manual) .*correct=true "
      + "seconds=([0-9.]+) host_seconds=([0-9.]+) jit_seconds=([0-9.]+)");

  /**
   * The loops of one ping-pong job by mode: per loop, its seconds, host seconds and JIT seconds. Fails unless
   * each mode printed {@code each} correct results.
   */
  static Map<String, List<double[]>> streamLoops(String output, int each) {
    Map<String, List<double[]>> loops = new TreeMap<>();
    Matcher m = STREAM_RESULT.matcher(output);
    while (m.find()) {
      loops.computeIfAbsent(m.group(1), x -> new ArrayList<>()).add(new double[] {Double.parseDouble(m.group(2)),
          Double.parseDouble(m.group(3)), Double.parseDouble(m.group(4))});
    }
    for (String mode : List.of("ordered", "manual")) {
      if (loops.getOrDefault(mode, List.of()).size() != each) {
        throw new IllegalStateException("Pipeline printed " + loops.getOrDefault(mode, List.of()).size() + " correct "
            + mode + " results, not " + each + ":\n" + output);
      }
    }
    return loops;
  }

  /** The mean of column {@code column} of {@code rows}. */
  static double meanOf(List<double[]> rows, int column) {
    double sum = 0;
    for (double[] row : rows) {
      sum += row[column];
    }
    return sum / rows.size();
  }
  /** Runs a command, echoing its output, and returns it; fails on a non-zero exit or a timeout. */
  static String run(List<String> cmd, Map<String, String> env, long timeoutSeconds) throws Exception {
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().putAll(env);
    Process p = pb.start();
    StringBuilder all = new StringBuilder();
    Thread pump = new Thread(() -> {
      try (var r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
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
    org.mpibuild.support.BackendSupport.deleteTree(dir);
  }
}
