package org.mpibuild.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.mpibuild.support.BackendSupport;

/**
 * {@code make bench}: the main comparison. For each N it runs a {@link Bench} cold job and a warm job under
 * mpirun, then {@link BcastBench} at 4 and 2 ranks; then it writes Markdown tables (times, CPU, where the
 * time goes), two charts (time to ready; its phases), JSON with every raw figure and the machine, and the
 * {@code bench:} line with the goals. Every ratio is a median of per-repetition ratios with a
 * distribution-free 95% interval; cells in the same job are paired (OCCA over mpi-build: repetition i of two
 * jobs), warm over cold is not, and says so in its name.
 */
final class Comparison {
  record Mode(String name, List<Integer> ranks, int reps, String program, List<Integer> bcastSizes, int bcastReps) {}

  static final List<Integer> BCAST_SIZES = List.of(1 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20);
  static final Mode QUICK = new Mode("quick", List.of(1, 2, 4, 8, 16), 7, "matmul4", BCAST_SIZES, 15);
  static final Mode FULL = new Mode("full", List.of(1, 2, 4, 8, 16), 12, "matmul24", BCAST_SIZES, 21);

  /** The fewest repetitions a figure is published from (the project's standard). */
  static final int MIN_REPS = 7;

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
    if (m.reps() < MIN_REPS) {
      throw new IllegalArgumentException("reps=" + m.reps() + " is too few: a published figure takes " + MIN_REPS
          + " or more paired repetitions");
    }
    return m;
  }

  /**
   * The repetitions the job {@code job} runs for {@code reps}: rounded up to a multiple of its number of strategies,
   * so that every rotation order occurs equally often (ratios pair the repetitions both sides have); a cold job runs
   * at least as many as the warm job, whose repetition i reads the caches of the cold jobs' repetition i.
   */
  static int jobReps(int reps, String job) {
    int warm = Stats.roundUpToMultiple(reps, Bench.WARM.size());
    return job.equals("warm") ? warm : Stats.roundUpToMultiple(warm, Bench.strategies(job).size());
  }

  static void run(Path repo, Path out, Mode mode) throws Exception {
    long started = System.nanoTime();
    Map<String, Object> machine = Machine.describe(repo);
    System.out.println("bench: mode " + mode.name() + ", ranks " + mode.ranks() + ", " + mode.reps()
        + " repetitions or more per cell (each job's rounded up to a multiple of its strategies) after a dropped "
        + "warm-up (mpi-build's and naive's cold cells paired in one job, OCCA's in another, warm cells in a third), "
        + "program " + mode.program() + "; machine " + machine);
    List<Map<String, String>> cells = new ArrayList<>();
    List<String> lost = new ArrayList<>(); // the jobs that failed: said in the report, never the end of it
    for (int n : mode.ranks()) {
      cells.addAll(jobsAt(repo, out, mode, n, lost));
    }
    for (int n : mode.ranks()) {
      if (!CellQueries.series(cells, n, Bench.LOCK_LONG_VOID, "ms").isEmpty()) {
        lost.add("lock-long at N = " + n + " measured nothing (its compile was not longer than its stale age): its "
            + "cells are in results.json as " + Bench.LOCK_LONG_VOID + ", left out of the tables");
      }
    }
    List<Map<String, String>> bcasts = broadcasts(repo, out, mode, lost);
    report(out, mode, machine, cells, bcasts, lost, started);
  }

  /**
   * The cold job at N (naive, mpi-build and the limit), OCCA's cold job (processes of their own: on PoCL before 6.0,
   * mpi-build's compile in a process sets a value of POCL_BINARY_SPECIALIZE_WG that PoCL keeps, and OCCA's binary
   * query there would build mpi-build's named functions too), then the warm job on their caches; a failed job's
   * finished cells are kept, and {@code lost} says what is missing.
   */
  private static List<Map<String, String>> jobsAt(Path repo, Path out, Mode mode, int n, List<String> lost)
      throws Exception {
    List<Map<String, String>> cells = new ArrayList<>();
    Path work = Files.createTempDirectory(out, "work-" + n + "-");
    String salt = Long.toString(System.nanoTime());
    String coldLost = null;
    for (String phase : List.of("cold", "occa", "warm")) {
      Path jsonl = out.resolve("cells-" + n + "-" + phase + ".jsonl");
      if (phase.equals("warm") && coldLost != null) { // it reads the cold jobs' caches: without them, cold cells
        lost.add("the warm job at N = " + n + " was not run: the " + coldLost + " job before it failed");
        continue;
      }
      try {
        BenchReport.run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", Integer.toString(n), "-cp",
            System.getProperty("java.class.path"), "org.mpibuild.bench.Bench", jsonl.toString(), phase,
            Integer.toString(jobReps(mode.reps(), phase)), mode.program()),
            Map.of("MPI_BUILD_BENCH_DIR", work.toString(), "MPI_BUILD_BENCH_RUN", salt,
                // native access, as a user of Java 22+ gives it: mpi-build's PoCL compile then runs in the rank
                "MPI_BUILD_JAVA_OPTS", "-XX:+UseSerialGC -Xmx1g --enable-native-access=ALL-UNNAMED"), 3600);
        cells.addAll(BenchJson.readLines(Files.readString(jsonl)));
      } catch (Exception | AssertionError e) {
        // The job wrote each cell as it measured it: what it finished is kept, paired by repetition.
        List<Map<String, String>> partial = finishedCells(jsonl);
        cells.addAll(partial);
        String why = "the " + phase + " job at N = " + n + " failed after " + partial.size() + " cells (kept, paired "
            + "by repetition; the rest are missing): " + BackendSupport.firstLine(e);
        System.out.println("bench: " + why);
        lost.add(why);
        coldLost = phase.equals("warm") ? coldLost : phase;
      }
    }
    BenchReport.deleteTree(work);
    return cells;
  }

  /** The complete lines of a job that failed; none where they cannot be read. */
  private static List<Map<String, String>> finishedCells(Path jsonl) {
    try {
      return Files.exists(jsonl) ? BenchJson.readCompleteLines(Files.readString(jsonl)) : List.of();
    } catch (Exception | AssertionError unreadable) {
      return List.of(); // not the job's lines: nothing of it is kept
    }
  }

  /** The broadcast jobs at 4 and 2 ranks; {@code lost} says which failed. */
  private static List<Map<String, String>> broadcasts(Path repo, Path out, Mode mode, List<String> lost) {
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
    return bcasts;
  }

  /**
   * Writes results.md (the tables, the {@code bench:} line and what was not measured), results.json and the
   * charts, then prints the tables and the line.
   */
  private static void report(Path out, Mode mode, Map<String, Object> machine, List<Map<String, String>> cells,
      List<Map<String, String>> bcasts, List<String> lost, long started) throws Exception {
    int cores = ((Number) machine.get("cores")).intValue();
    String md;
    Map<String, Object> line;
    String benchLine;
    try {
      md = ComparisonTables.markdown(mode, cells, bcasts, cores);
      line = BenchLine.figures(mode, cells, bcasts);
      benchLine = BenchLine.line(mode, line);
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
}
