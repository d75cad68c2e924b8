package org.mpibuild.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The main comparison's tables, in Markdown: times, CPU, where the time goes, ratios, goals and the broadcast. */
final class ComparisonTables {
  private ComparisonTables() {}

  /** What a table prints where a strategy has no cells at an N: its job failed, or it was never run. */
  static final String NOT_MEASURED = "not measured";

  /** The median of a field as a table prints it, {@link #NOT_MEASURED} where there is none. */
  static String medianCell(List<Map<String, String>> cells, int n, String strategy, String field) {
    List<Double> xs = CellQueries.series(cells, n, strategy, field);
    return xs.isEmpty() ? NOT_MEASURED : fmt(Stats.median(xs));
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

  static String markdown(Comparison.Mode mode, List<Map<String, String>> cells, List<Map<String, String>> bcasts,
      int cores) {
    List<String> cols = StrategyLabels.present(cells, mode.ranks());
    if (cols.isEmpty()) {
      return "(no cell was measured: see Not measured)\n";
    }
    boolean phases = cells.stream().anyMatch(c -> c.containsKey("phase_setup_ms"));
    StringBuilder sb = new StringBuilder();
    if (!phases) {
      sb.append("**These figures come from the benchmark as it was before every phase was timed**: naive read the "
          + "program binary, the limit built generic code, mpi-build's context was created outside the timed region, "
          + "and no request named its launch shapes. Run `make bench` and `make bench-publish` for figures of the "
          + "benchmark this page describes.\n\n");
    }
    timeTable(sb, mode, cells, cols, phases, cores);
    cpuTable(sb, mode, cells, cols, phases);
    if (phases) {
      phaseTable(sb, mode, cells, cols);
    }
    ratioTable(sb, mode, cells);
    goalTable(sb, mode, cells, bcasts);
    for (int n : List.of(4, 2)) {
      broadcastTable(sb, mode, bcasts, n, cores);
    }
    return sb.toString();
  }

  /** Time until every rank holds a ready kernel: median [min-max] per strategy and N, and the compiles. */
  private static void timeTable(StringBuilder sb, Comparison.Mode mode, List<Map<String, String>> cells,
      List<String> cols, boolean phases, int cores) {
    sb.append("Time until every rank holds a ready kernel (context open, built or loaded, every kernel launched once "
        + "and finished), program `").append(mode.program()).append("`: median ms [min-max] over ")
        .append(Comparison.jobReps(mode.reps(), "cold")).append(" repetitions (")
        .append(Comparison.jobReps(mode.reps(), "warm")).append(" warm); compiles summed over ranks. Runs with N > ")
        .append(cores)
        .append(" cores are oversubscribed. Warm cells ran in a job of their own: unpaired with the cold ones.\n\n| N | cores |");
    cols.forEach(s -> sb.append(' ').append(StrategyLabels.label(s, !phases)).append(" |"));
    sb.append("\n|---|---|");
    cols.forEach(s -> sb.append("---|"));
    sb.append('\n');
    for (int n : mode.ranks()) {
      sb.append("| ").append(n).append(" | ").append(n <= cores ? "a core per rank" : "oversubscribed").append(" |");
      for (String s : cols) {
        List<Double> ms = CellQueries.series(cells, n, s, "ms");
        if (ms.isEmpty()) {
          sb.append(' ').append(NOT_MEASURED).append(" |");
          continue;
        }
        sb.append(' ').append(fmt(Stats.median(ms))).append(" [").append(fmt(Stats.min(ms))).append('-')
            .append(fmt(Stats.max(ms))).append("]; ").append(medianCell(cells, n, s, "compiles")).append(" |");
      }
      sb.append('\n');
    }
  }

  /** CPU-seconds summed over ranks and shared-directory file operations, medians per strategy and N. */
  private static void cpuTable(StringBuilder sb, Comparison.Mode mode, List<Map<String, String>> cells,
      List<String> cols, boolean phases) {
    sb.append("\nCPU-seconds summed over ranks (median), and shared-directory file operations (median)\n\n| N |");
    cols.forEach(s -> sb.append(' ').append(StrategyLabels.label(s, !phases)).append(" |"));
    sb.append("\n|---|");
    cols.forEach(s -> sb.append("---|"));
    sb.append('\n');
    for (int n : mode.ranks()) {
      sb.append("| ").append(n).append(" |");
      for (String s : cols) {
        sb.append(' ').append(CellQueries.series(cells, n, s, "cpu_s").isEmpty() ? NOT_MEASURED
            : medianCell(cells, n, s, "cpu_s") + " s; " + medianCell(cells, n, s, "fsops")).append(" |");
      }
      sb.append('\n');
    }
  }

  /** Where the time goes: the slowest rank's phases and the slowest receiver's load + first launch. */
  private static void phaseTable(StringBuilder sb, Comparison.Mode mode, List<Map<String, String>> cells,
      List<String> cols) {
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
        if (CellQueries.series(cells, n, s, "ms").isEmpty()) {
          continue;
        }
        sb.append("| ").append(n).append(" | ").append(StrategyLabels.SHORT.getOrDefault(s, s)).append(" |");
        for (String p : Phases.NAMES) {
          sb.append(' ').append(medianCell(cells, n, s, "phase_" + p + "_ms")).append(" |");
        }
        double recv = CellQueries.medianOr(CellQueries.receivers(cells, n, s), n, s, "receiver_ready_ms");
        sb.append(' ').append(medianCell(cells, n, s, "phase_other_ms")).append(" | ")
            .append(medianCell(cells, n, s, "ms")).append(" | ")
            .append(recv < 0 ? "-" : fmt(recv)).append(" |\n");
      }
    }
  }

  /** The paired ratios at every N, and lock-long's compiles, stale age and poll where it ran. */
  private static void ratioTable(StringBuilder sb, Comparison.Mode mode, List<Map<String, String>> cells) {
    List<BenchLine.Ratio> ratios = BenchLine.RATIOS.stream()
        .filter(r -> mode.ranks().stream().anyMatch(n -> BenchLine.measured(cells, n, r))).toList();
    boolean lockLong = mode.ranks().stream().anyMatch(n -> CellQueries.has(cells, n, "lock-long", "ms"));
    sb.append("\nRatios: the median of the per-repetition ratios, [95% interval of that median]; cells of one job "
        + "are paired; OCCA's cells ran in a job of their own, so OCCA over mpi-build pairs repetition i of each job, "
        + "minutes apart; warm over cold is unpaired (two jobs; repetition i over repetition i)\n\n| N |");
    ratios.forEach(r -> sb.append(' ').append(r.name()).append(" |"));
    sb.append(lockLong ? " lock-long compiles | lock-long stale / poll ms |\n|---|" : "\n|---|");
    ratios.forEach(r -> sb.append("---|"));
    sb.append(lockLong ? "---|---|\n" : "\n");
    for (int n : mode.ranks()) {
      sb.append("| ").append(n).append(" |");
      ratios.forEach(r -> sb.append(' ').append(r.appliesAt(n) ? ratioCell(BenchLine.ratios(cells, n, r)) : "-").append(" |"));
      if (lockLong && !CellQueries.has(cells, n, "lock-long", "ms")) {
        sb.append(' ').append(NOT_MEASURED).append(" | ").append(NOT_MEASURED).append(" |");
      } else if (lockLong) {
        sb.append(' ').append(medianCell(cells, n, "lock-long", "compiles")).append(" | ")
            .append(medianCell(cells, n, "lock-long", "stale_ms")).append(" / ")
            .append(medianCell(cells, n, "lock-long", "poll_ms")).append(" (compile ")
            .append(medianCell(cells, n, "lock-long", "compile_ms")).append(" ms) |");
      }
      sb.append('\n');
    }
  }

  /** The goals of the {@code bench:} line, where it has any. */
  private static void goalTable(StringBuilder sb, Comparison.Mode mode, List<Map<String, String>> cells,
      List<Map<String, String>> bcasts) {
    Map<String, Object> line = BenchLine.figures(mode, cells, bcasts);
    if (line.get("goals") instanceof Map<?, ?> goals) {
      sb.append("\nGoals, judged on the median; [95% interval]\n\n| goal | verdict | median [95%] |\n|---|---|---|\n");
      goals.forEach((g, x) -> {
        Map<?, ?> m = (Map<?, ?>) x;
        sb.append("| ").append(g).append(" | ").append(m.get("verdict")).append(" | ").append(m.get("median"))
            .append(" [").append(m.get("ci95_low")).append('-').append(m.get("ci95_high")).append("] |\n");
      });
    }
  }

  /** The envelope broadcast against a raw one at {@code n} ranks, per payload size, with its goal. */
  private static void broadcastTable(StringBuilder sb, Comparison.Mode mode, List<Map<String, String>> bcasts,
      int n, int cores) {
    sb.append("\nBroadcast of a binary at ").append(n).append(" ranks").append(n > cores ? " (oversubscribed)" : "")
        .append(": mpi-build's envelope broadcast (header, metadata, CRC32C table, pieces checked on arrival) "
            + "against a raw Java direct-buffer MPI_Bcast of the same bytes in the same job, slowest rank, paired "
            + "and alternated; median us over ").append(mode.bcastReps()).append(" repetitions\n\n"
            + "| payload | raw | envelope | envelope / raw [95%] | envelope - raw (us) | whole call | goal |\n"
            + "|---|---|---|---|---|---|---|\n");
    for (int bytes : mode.bcastSizes()) {
      List<Map<String, String>> rows = CellQueries.bcastRows(bcasts, n, bytes);
      if (rows.isEmpty()) {
        sb.append("| ").append(BenchLine.human(bytes)).append(" | ").append(NOT_MEASURED).append(" | | | | | |\n");
        continue;
      }
      List<Double> raw = CellQueries.column(rows, "java_direct_us");
      List<Double> env = CellQueries.column(rows, "envelope_us");
      List<Double> ratio = Stats.ratios(env, raw);
      List<Double> diff = new ArrayList<>();
      for (int i = 0; i < raw.size(); i++) {
        diff.add(env.get(i) - raw.get(i));
      }
      String goal = bytes >= (1 << 20) ? (Stats.median(ratio) <= 1.1 ? "met (<= 1.1x)" : "missed (> 1.1x)")
          : bytes <= (64 << 10) ? (Stats.median(diff) <= 300 ? "met (<= raw + 0.3 ms)" : "missed (> raw + 0.3 ms)")
          : "";
      sb.append("| ").append(BenchLine.human(bytes)).append(" | ").append(fmt(Stats.median(raw))).append(" | ")
          .append(fmt(Stats.median(env))).append(" | ").append(ratioCell(ratio)).append(" | ")
          .append(fmt(Stats.median(diff))).append(" | ").append(fmt(Stats.median(CellQueries.column(rows, "call_us"))))
          .append(" | ").append(goal).append(" |\n");
    }
  }
}
