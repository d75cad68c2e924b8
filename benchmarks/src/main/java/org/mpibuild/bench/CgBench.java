package org.mpibuild.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The conjugate gradient example's two modes against each other ({@code make bench-cg}): {@code Cg}
 * ({@code org.mpibuild.examples.cg}) under {@code bin/mpi-build run}, time per iteration of {@code ordered}
 * (halo exchange and dot products ordered on the device's queue) over {@code manual} (the host finishes the queue
 * and calls MPI), the host CPU each mode keeps busy, and the time to the first iteration with mpi-build's
 * collective build against every rank compiling its own kernels.
 *
 * <p>A timing repetition is one job per rank count and grid that solves four times on the same kernels, ordered,
 * manual, manual, ordered or its mirror, alternating from one repetition to the next; each solve runs its warm-up
 * iterations first, unmeasured, and a fixed number of iterations ({@code --tol 0}). Its ratios compare the modes'
 * means in the job. The kernels come from a library cache of the benchmark's own, compiled by the first job, so
 * that a timing job does not spend its time compiling. A first-iteration repetition is two jobs at the largest
 * rank count on the small grid, {@code --build collective} and {@code --build each-rank}, in alternating order,
 * each with every cache cold (the library's off, a fresh PoCL cache per rank, which {@code bin/mpi-build} gives).
 */
final class CgBench {
  static final String CG = "org.mpibuild.examples.cg.Cg";
  /** The timing repetitions, and the first-iteration pairs: at least 6 for a 95% interval of a median. */
  static final int DEFAULT_REPS = 7;
  /** Interior points per row and rows per rank of the small grid: latency-bound. */
  static final int DEFAULT_SMALL = 64;
  /** Interior points per row and rows per rank of the large grid: compute-bound, seconds per job on 2 cores. */
  static final int DEFAULT_LARGE = 512;

  private CgBench() {}

  /**
   * A grid of {@code side × side} interior points per rank (the whole grid {@code side × side·ranks}) and how a
   * timing job runs it.
   *
   * @param name "small" or "large"
   * @param side the points per row, and the rows per rank
   * @param warmup unmeasured iterations before each solve
   * @param iterations the iterations of each solve (the first is not timed)
   */
  record Grid(String name, int side, int warmup, int iterations) {
    List<String> args(int ranks) {
      return List.of("--n", Integer.toString(side), "--ny", Integer.toString(side * ranks), "--tol", "0",
          "--max-iterations", Integer.toString(iterations), "--warmup", Integer.toString(warmup));
    }

    String label() {
      return side + "×" + side + " per rank";
    }
  }

  /**
   * The grids for the given sizes: the small one runs more iterations, as each takes about a millisecond. Both
   * warm up for thousands of operations first: with fewer, the JIT was still compiling the ordered mode's stream
   * path while it was timed (measured at 1 and 2 ranks: 450-650 ms of C2 per ordered solve, against 30-70 for
   * manual, and ordered/manual 2.2 at 512 x 512 with 10 warm-up iterations, 1.45 with 1000).
   */
  static List<Grid> grids(int small, int large) {
    return List.of(new Grid("small", small, 2000, 301), new Grid("large", large, 1000, 41));
  }

  /** One {@code CG} line of {@code Cg}: a solve's figures per iteration (ms; CPU the slowest rank's). */
  record Solve(String mode, int ranks, double ms, double hostCpuMs, double helperCpuMs, String run) {
    /** The program thread's and the messenger's threads' CPU together: what the mode keeps busy on the host. */
    double cpuMs() {
      return hostCpuMs + helperCpuMs;
    }
  }

  private static final Pattern SOLVE = Pattern.compile("CG mode=(ordered|manual) ranks=(\\d+) .*?"
      + "ms_per_iteration=([0-9.]+) host_cpu_ms_per_iteration=([0-9.]+) helper_cpu_ms_per_iteration=([0-9.]+) .*?"
      + "run=(.*)");

  /** The solves a job printed, in order. */
  static List<Solve> solves(String output) {
    List<Solve> out = new ArrayList<>();
    Matcher m = SOLVE.matcher(output);
    while (m.find()) {
      out.add(new Solve(m.group(1), Integer.parseInt(m.group(2)), Double.parseDouble(m.group(3)),
          Double.parseDouble(m.group(4)), Double.parseDouble(m.group(5)), m.group(6).trim()));
    }
    return out;
  }

  private static final Pattern FIRST = Pattern.compile("CG-FIRST build=(collective|each-rank) ranks=\\d+ "
      + "first_iteration_ms=([0-9.]+) build_ms=([0-9.]+)");

  /**
   * The {@code CG-FIRST} line of a job: milliseconds to the end of the first iteration and to the kernels, the
   * slowest rank's; fails without one, or if it names another build than {@code build}.
   */
  static double[] first(String output, String build) {
    Matcher m = FIRST.matcher(output);
    if (!m.find() || !m.group(1).equals(build)) {
      throw new IllegalStateException("Cg printed no CG-FIRST line of the " + build + " build:\n" + output);
    }
    return new double[] {Double.parseDouble(m.group(2)), Double.parseDouble(m.group(3))};
  }

  /** The modes of timing repetition {@code rep}: ordered, manual, manual, ordered, and the mirror in odd ones. */
  static String modes(int rep) {
    return rep % 2 == 0 ? "ordered,manual,manual,ordered" : "manual,ordered,ordered,manual";
  }

  /** One repetition's two modes: each the mean of its solves in the job. */
  record Pair(Solve ordered, Solve manual) {
    double time() {
      return ordered.ms() / manual.ms();
    }

    double cpu() {
      return ordered.cpuMs() / manual.cpuMs();
    }

    double hostThread() {
      return ordered.hostCpuMs() / manual.hostCpuMs();
    }
  }

  /**
   * Pairs a timing job's solves: each mode's mean over its solves. The job must have solved in both modes, as many
   * times each.
   */
  static Pair pair(List<Solve> solves) {
    List<Solve> ordered = solves.stream().filter(s -> s.mode().equals("ordered")).toList();
    List<Solve> manual = solves.stream().filter(s -> s.mode().equals("manual")).toList();
    if (ordered.isEmpty() || ordered.size() != manual.size()) {
      throw new IllegalArgumentException(ordered.size() + " ordered and " + manual.size() + " manual solves in one "
          + "repetition: " + solves);
    }
    return new Pair(mean(ordered), mean(manual));
  }

  private static Solve mean(List<Solve> solves) {
    double ms = 0;
    double host = 0;
    double helper = 0;
    for (Solve s : solves) {
      ms += s.ms();
      host += s.hostCpuMs();
      helper += s.helperCpuMs();
    }
    int n = solves.size();
    Solve first = solves.get(0);
    return new Solve(first.mode(), first.ranks(), ms / n, host / n, helper / n, first.run());
  }

  /** The repetitions of one binding, rank count and grid. */
  record Cell(String binding, int ranks, Grid grid, List<Pair> pairs) {
    String key() {
      return grid.name() + "_n" + ranks;
    }

    List<Double> of(java.util.function.ToDoubleFunction<Pair> f) {
      return pairs.stream().map(p -> f.applyAsDouble(p)).toList();
    }

    /** Where the ordered mode's operations ran, as {@code Cg} said. */
    String run() {
      return pairs.get(0).ordered().run();
    }
  }

  /** The first-iteration pairs at one rank count: ms of the collective build's job and of each-rank's. */
  record First(int ranks, List<Double> collectiveMs, List<Double> eachRankMs, List<Double> collectiveBuildMs,
      List<Double> eachRankBuildMs) {
    List<Double> ratios() {
      return Stats.ratios(collectiveMs, eachRankMs);
    }
  }

  /** A goal: a paired ratio's median against a bound, at most. */
  record Goal(String name, List<Double> values, double bound) {}

  /**
   * The goals of issue 43 on the main binding's cells: ordered over manual time per iteration at most 0.75 on the
   * small grid at 2 ranks and at most 1.0 on the large one at 2 ranks; the host CPU of ordered at most 0.10 of
   * manual's in every cell; and the collective build's first iteration at most each-rank's (a goal whose cell did
   * not run is not judged).
   */
  static List<Goal> goals(List<Cell> main, First first) {
    List<Goal> out = new ArrayList<>();
    for (Cell c : main) {
      if (c.ranks() == 2) {
        double bound = c.grid().name().equals("small") ? 0.75 : 1.0;
        out.add(new Goal("time_" + c.key() + "_le_" + bound, c.of(Pair::time), bound));
      }
    }
    for (Cell c : main) {
      out.add(new Goal("host_cpu_" + c.key() + "_le_0.10", c.of(Pair::cpu), 0.10));
    }
    if (first != null) {
      out.add(new Goal("first_iteration_collective_over_each_rank_n" + first.ranks() + "_le_1.0", first.ratios(),
          1.0));
    }
    return out;
  }

  /** The figures of a run for JSON and the {@code bench:} line: ratios per cell, first iteration, goals. */
  static Map<String, Object> figures(List<Cell> cells, First first) {
    Map<String, Object> out = new LinkedHashMap<>();
    String main = cells.get(0).binding();
    List<Cell> mainCells = cells.stream().filter(c -> c.binding().equals(main)).toList();
    out.put("binding", main);
    for (Cell c : mainCells) {
      out.put("time_" + c.key(), BenchLine.summary(c.of(Pair::time)));
      out.put("host_cpu_" + c.key(), BenchLine.summary(c.of(Pair::cpu)));
    }
    if (first != null) {
      out.put("first_iteration_collective_ms_n" + first.ranks(), BenchLine.summary(first.collectiveMs()));
      out.put("first_iteration_each_rank_ms_n" + first.ranks(), BenchLine.summary(first.eachRankMs()));
    }
    Map<String, Object> goals = new LinkedHashMap<>();
    for (Goal g : goals(mainCells, first)) {
      goals.put(g.name(), BenchLine.judged(g.values(), g.bound(), true));
    }
    out.put("goals", goals);
    return out;
  }

  /** The {@code bench:} line of {@link #figures}. */
  @SuppressWarnings("unchecked")
  static String line(Map<String, Object> figures, int reps, List<Grid> grids) {
    StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "bench: cg binding=%s reps=%d", figures.get(
        "binding"), reps));
    for (Grid g : grids) {
      sb.append(' ').append(g.name()).append("_per_rank=").append(g.side()).append('x').append(g.side());
    }
    figures.forEach((k, v) -> {
      if (k.equals("goals")) {
        ((Map<String, Object>) v).forEach((g, s) -> sb.append(BenchLine.goalField(g, (Map<String, Object>) s)));
      } else if (v instanceof Map<?, ?> s) {
        sb.append(BenchLine.figureField(k, (Map<String, Object>) s));
      }
    });
    return sb.toString();
  }

  /** The report: how it was measured, a table per binding, the first iteration, the {@code bench:} line. */
  static String report(List<Cell> cells, First first, String line, int reps) {
    StringBuilder md = new StringBuilder(String.format(Locale.ROOT, "The conjugate gradient example (`Cg`), ordered "
        + "(halo exchange `sendAfter`/`receiveBefore`, both dot products `allreduceAfter`, the host reading r·r every "
        + "10 iterations) against manual (`clFinish`, host MPI, blocking writes), %d repetitions, each one job that "
        + "solved ordered, manual, manual, ordered or its mirror, alternating, on the same kernels (from the "
        + "benchmark's own warm cache); the ratio compares the modes' means in the job. Time per iteration: the "
        + "slowest rank's, the first iteration of each solve left out; host CPU: the program thread's plus the "
        + "messenger's own threads' (the slowest rank's each), per iteration. Median [95%% interval].%n%n", reps));
    String binding = null;
    for (Cell c : cells) {
      if (!c.binding().equals(binding)) {
        binding = c.binding();
        md.append(String.format(Locale.ROOT, "%s, the ordered mode's operations run %s.%n%n", label(binding), c.run()))
            .append("| ranks | grid | iterations timed | ordered ms/iteration | manual ms/iteration "
                + "| ordered / manual | host CPU ordered ms/iteration (program + messenger) "
                + "| host CPU manual ms/iteration | host CPU ordered / manual | program thread alone, ordered / manual |\n"
                + "|---|---|---|---|---|---|---|---|---|---|\n");
      }
      md.append(String.format(Locale.ROOT, "| %d | %s (%d×%d) | %d | %s | %s | %s | %s + %s | %s | %s | %s |%n",
          c.ranks(), c.grid().label(), c.grid().side(), c.grid().side() * c.ranks(), c.grid().iterations() - 1,
          AllReduceBench.cell(c.of(p -> p.ordered().ms()), 3), AllReduceBench.cell(c.of(p -> p.manual().ms()), 3),
          AllReduceBench.cell(c.of(Pair::time), 2), AllReduceBench.cell(c.of(p -> p.ordered().hostCpuMs()), 3),
          AllReduceBench.cell(c.of(p -> p.ordered().helperCpuMs()), 3),
          AllReduceBench.cell(c.of(p -> p.manual().cpuMs()), 3), AllReduceBench.cell(c.of(Pair::cpu), 3),
          AllReduceBench.cell(c.of(Pair::hostThread), 3)));
      if (c == cells.get(cells.size() - 1) || !cells.get(cells.indexOf(c) + 1).binding().equals(binding)) {
        md.append('\n');
      }
    }
    if (first != null) {
      md.append(String.format(Locale.ROOT, "Time to the first iteration at %d ranks, %s, every cache cold (the "
          + "library's off, a fresh PoCL cache per rank), from a barrier after MPI's initialization to the end of the "
          + "first iteration (the slowest rank's), %d pairs of jobs in alternating order, ordered mode, the %s:%n%n"
          + "| build | first iteration ms | kernels ready ms |%n|---|---|---|%n"
          + "| mpi-build (`--build collective`: rank 0 compiles with the launch shapes named, every rank loads) "
          + "| %s | %s |%n| every rank compiles (`--build each-rank`) | %s | %s |%n%n"
          + "mpi-build over each-rank: %s.%n%n", first.ranks(), cells.get(0).grid().label(), first.ratios().size(),
          label(cells.get(0).binding()), AllReduceBench.cell(first.collectiveMs(), 0),
          AllReduceBench.cell(first.collectiveBuildMs(), 0), AllReduceBench.cell(first.eachRankMs(), 0),
          AllReduceBench.cell(first.eachRankBuildMs(), 0), AllReduceBench.cell(first.ratios(), 2)));
    }
    md.append(line).append('\n');
    return md.toString();
  }

  /** "FFM binding (JDK 25)", "mpi.jar binding (Java 17)": how the report names a binding. */
  static String label(String binding) {
    return switch (binding) {
      case "ffm" -> "FFM binding (the JDK 22+ of `.mvn/maven.config`, native access)";
      case "mpijava" -> "mpi.jar binding (the default `java`)";
      default -> throw new IllegalArgumentException("a binding is ffm or mpijava, not '" + binding + "'");
    };
  }

  /**
   * The environment of a job on {@code binding}: the FFM binding on the JDK that provisioning found, with native
   * access (operations on the queue); mpi.jar on the default {@code java} (Java 17: the messenger's progress
   * thread). The binding is set either way, so that a caller's own {@code MPI_BUILD_BINDING} does not choose it.
   */
  static Map<String, String> env(Path repo, String binding, Path cache) throws Exception {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("MPI_BUILD_BINDING", binding);
    env.put("MPI_BUILD_JAVA", binding.equals("ffm") ? BenchReport.ffmJava(repo) : "java");
    env.put("MPI_BUILD_JAVA_OPTS", "-XX:+UseSerialGC -Xmx1g" + (binding.equals("ffm")
        ? " --enable-native-access=ALL-UNNAMED" : ""));
    if (cache != null) {
      env.put("MPI_BUILD_CACHE", "on");
      env.put("MPI_BUILD_CACHE_DIR", cache.toString());
    } else {
      env.put("MPI_BUILD_CACHE", "off");
    }
    return env;
  }

  private static String job(Path repo, int ranks, Map<String, String> env, List<String> args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np",
        Integer.toString(ranks), "-cp", System.getProperty("java.class.path"), CG));
    cmd.addAll(args);
    return BenchReport.run(cmd, env, 600);
  }

  /**
   * Runs the benchmark and writes results.md, results.json and cg.png into {@code out}.
   *
   * @param reps timing repetitions per cell (at least 6)
   * @param firstReps first-iteration pairs (0: none; else at least 6)
   * @param ranks the rank counts; the first-iteration pairs run at the largest
   * @param grids the grids
   * @param bindings the bindings, the first the main one (its cells are judged)
   */
  static void run(Path repo, Path out, int reps, int firstReps, List<Integer> ranks, List<Grid> grids,
      List<String> bindings) throws Exception {
    if (reps < 6 || firstReps != 0 && firstReps < 6) {
      throw new IllegalArgumentException("reps=" + reps + " and first_reps=" + firstReps + ": a median's 95% interval "
          + "needs 6 repetitions or more (first_reps may be 0)");
    }
    bindings.forEach(CgBench::label); // an unknown binding fails here, before any job
    Files.createDirectories(out);
    Path cache = out.resolve("cache");
    BenchReport.deleteTree(cache);
    List<Object> raw = new ArrayList<>();
    List<Cell> cells = new ArrayList<>();
    for (String binding : bindings) {
      Map<String, String> env = env(repo, binding, cache);
      for (int n : ranks) {
        for (Grid g : grids) {
          List<Pair> pairs = new ArrayList<>();
          for (int rep = 0; rep < reps; rep++) {
            List<String> args = new ArrayList<>(List.of("--mode", modes(rep)));
            args.addAll(g.args(n));
            List<Solve> solves = solves(job(repo, n, env, args));
            Pair p = pair(solves);
            pairs.add(p);
            for (Solve s : solves) {
              raw.add(BenchJson.object("binding", binding, "ranks", n, "grid", g.name(), "side", g.side(), "rep",
                  rep + 1, "mode", s.mode(), "ms_per_iteration", s.ms(), "host_cpu_ms_per_iteration", s.hostCpuMs(),
                  "helper_cpu_ms_per_iteration", s.helperCpuMs(), "run", s.run()));
            }
            System.out.printf(Locale.ROOT, "bench cg: %s, %d ranks, %s grid, repetition %d (%s): ordered %.3f ms, "
                + "manual %.3f ms per iteration (%.2f); host CPU %.3f and %.3f ms%n", binding, n, g.name(), rep + 1,
                modes(rep), p.ordered().ms(), p.manual().ms(), p.time(), p.ordered().cpuMs(), p.manual().cpuMs());
          }
          cells.add(new Cell(binding, n, g, pairs));
        }
      }
    }
    First first = firstReps == 0 ? null : first(repo, ranks.get(ranks.size() - 1), grids.get(0), firstReps,
        env(repo, bindings.get(0), null), raw);
    Map<String, Object> figures = figures(cells, first);
    String line = line(figures, reps, grids);
    String md = report(cells, first, line, reps);
    Files.writeString(out.resolve("results.md"), md);
    Map<String, Object> machine = Machine.describe(repo);
    Files.writeString(out.resolve("results.json"), BenchJson.pretty(BenchJson.object("reps", reps, "first_reps",
        firstReps, "ranks", new ArrayList<Object>(ranks), "bindings", new ArrayList<Object>(bindings), "figures",
        figures, "runs", raw, "machine", machine)));
    Chart.writeCg(cells, machine, out.resolve("cg.png"));
    BenchReport.deleteTree(cache);
    System.out.println();
    System.out.println(md);
  }

  /** The first-iteration pairs: collective and each-rank jobs, cold, alternating which goes first. */
  private static First first(Path repo, int ranks, Grid grid, int pairs, Map<String, String> env, List<Object> raw)
      throws Exception {
    First f = new First(ranks, new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
    List<String> args = List.of("--mode", "ordered", "--n", Integer.toString(grid.side()), "--ny",
        Integer.toString(grid.side() * ranks), "--tol", "0", "--max-iterations", "2");
    for (int rep = 0; rep < pairs; rep++) {
      for (String build : rep % 2 == 0 ? List.of("collective", "each-rank") : List.of("each-rank", "collective")) {
        List<String> a = new ArrayList<>(args);
        a.addAll(List.of("--build", build));
        double[] ms = first(job(repo, ranks, env, a), build);
        (build.equals("collective") ? f.collectiveMs() : f.eachRankMs()).add(ms[0]);
        (build.equals("collective") ? f.collectiveBuildMs() : f.eachRankBuildMs()).add(ms[1]);
        raw.add(BenchJson.object("first_iteration", build, "ranks", ranks, "rep", rep + 1, "first_iteration_ms",
            ms[0], "build_ms", ms[1]));
        System.out.printf(Locale.ROOT, "bench cg: first iteration, %d ranks, %s, pair %d: %.0f ms (kernels ready "
            + "after %.0f ms)%n", ranks, build, rep + 1, ms[0], ms[1]);
      }
    }
    return f;
  }
}
