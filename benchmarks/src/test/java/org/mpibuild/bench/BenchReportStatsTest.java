package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The statistics the main comparison takes over the cells and rows the jobs wrote. */
class BenchReportStatsTest {
  static Map<String, String> cell(int n, String strategy, int rep, double ms) {
    return Map.of("n", Integer.toString(n), "program", "p", "strategy", strategy, "rep", Integer.toString(rep),
        "ms", Double.toString(ms), "cpu_s", Double.toString(ms / 100));
  }

  @Test
  void seriesAreOrderedByRepetitionSoThatRatiosArePaired() {
    List<Map<String, String>> cells = List.of(cell(4, "naive", 1, 300), cell(4, "naive", 0, 100),
        cell(4, "collective", 0, 50), cell(4, "collective", 1, 100), cell(8, "naive", 0, 1));
    assertEquals(List.of(100.0, 300.0), CellQueries.series(cells, 4, "naive", "ms"));
    // Paired: 100/50 and 300/100, not the ratio of medians (200/75).
    assertEquals(List.of(2.0, 3.0), BenchLine.ratios(cells, 4, BenchLine.RATIOS.get(0)));
  }

  @Test
  void onlyRepetitionsThatBothSidesHaveArePaired() {
    // collective lacks repetition 1 (its job died there): naive's 1 is left out, never paired with collective's 2
    List<Map<String, String>> cells = List.of(cell(4, "naive", 0, 100), cell(4, "naive", 1, 100),
        cell(4, "naive", 2, 300), cell(4, "collective", 0, 50), cell(4, "collective", 2, 100));
    assertEquals(List.of(2.0, 3.0), BenchLine.ratios(cells, 4, BenchLine.RATIOS.get(0)));
  }

  @Test
  void aStrategyMissingAtOneNIsPrintedAsNotMeasuredAndTheRestIsJudged() {
    List<Map<String, String>> cells = new ArrayList<>();
    for (int n : List.of(1, 2)) {
      for (int rep = 0; rep < 6; rep++) {
        for (String s : List.of("naive", "collective", "lock-long")) {
          if (n == 2 && s.equals("lock-long")) {
            continue; // its job died before it
          }
          Map<String, String> c = new java.util.HashMap<>(cell(n, s, rep, s.equals("naive") ? 200 : 100));
          c.put("compiles", "1");
          c.put("fsops", "0");
          cells.add(c);
        }
      }
    }
    Comparison.Mode mode = new Comparison.Mode("t", List.of(1, 2), 6, "p", List.of(), 7);
    String md = ComparisonTables.markdown(mode, cells, List.of(), 2);
    // columns: naive, lock-long, collective
    assertEquals(true, md.contains("| 2 | a core per rank | 200 [200-200]; 1.00 | not measured | 100 [100-100]; 1.00 |"), md);
    assertEquals(true, md.contains("| 2 | 2.00 [2.00-2.00] | not measured | 2.00 [2.00-2.00] |"), md);
    Map<String, Object> figures = BenchLine.figures(mode, cells, List.of());
    assertEquals(true, figures.containsKey("naive_over_collective"), figures.toString());
  }

  @Test
  void aJobThatDiedKeepsItsCompleteLines() {
    String jsonl = BenchJson.line("n", 1, "strategy", "naive", "rep", 0, "ms", 5.0) + "{\"n\": 1, \"strat";
    assertEquals(1, BenchJson.readCompleteLines(jsonl).size());
    assertEquals(0, BenchJson.readCompleteLines("{\"n\": 1").size());
  }

  @Test
  void theLineCarriesPairedMediansWithTheirIntervals() {
    List<Map<String, String>> cells = new ArrayList<>();
    List<Map<String, String>> bcasts = new ArrayList<>();
    for (int rep = 0; rep < 7; rep++) {
      for (String s : List.of("naive", "lock", "lock-long", "occa12", "collective", "limit", "collective-warm",
          "occa12-warm")) {
        Map<String, String> c = new java.util.HashMap<>(cell(16, s, rep, s.equals("collective") ? 100 : 100 + 10 * rep));
        c.put("compiles", "2");
        cells.add(c);
      }
      for (int bytes : BenchLine.LINE_SIZES) {
        bcasts.add(Map.of("n", "4", "bytes", Integer.toString(bytes), "java_direct_us", "10",
            "envelope_us", Integer.toString(11 + rep)));
      }
    }
    Comparison.Mode mode = new Comparison.Mode("t", List.of(16), 7, "p", BenchLine.LINE_SIZES, 7);
    Map<String, Object> figures = BenchLine.figures(mode, cells, bcasts);
    @SuppressWarnings("unchecked")
    Map<String, Object> naive = (Map<String, Object>) figures.get("naive_over_collective");
    assertEquals(1.3, naive.get("median"));
    assertEquals(1.0, naive.get("ci95_low"));
    assertEquals(1.6, naive.get("ci95_high"));
    String line = BenchLine.line(mode, figures);
    assertEquals(true, line.startsWith("bench: ranks=16 reps=7 naive_over_collective=1.3[1.0-1.6]"), line);
    assertEquals(true, line.contains("envelope_over_raw_1MiB=1.4[1.1-1.7]"), line);
    assertEquals(true, line.contains("lock_long_compiles=2.0[2.0-2.0]"), line);
  }

  @Test
  void goalsAreJudgedOnTheMedianAndPrintedWithTheirInterval() {
    List<Map<String, String>> cells = new ArrayList<>();
    for (int n : List.of(1, 16)) {
      for (int rep = 0; rep < 6; rep++) {
        for (String s : List.of("naive", "lock", "lock-long", "occa12", "collective", "limit-finished",
            "collective-warm", "occa12-warm")) {
          double ms = switch (s) {
            case "naive" -> 500 + rep; // 5x collective at 16
            case "collective-warm" -> n == 1 ? 5 + rep : 50; // 0.05-0.1 at 1, 0.5 at 16
            case "limit-finished" -> 95;
            default -> 100;
          };
          Map<String, String> c = new java.util.HashMap<>(cell(n, s, rep, ms));
          c.put("compiles", "1");
          c.put("phase_setup_ms", "1");
          c.put("phase_compile_ms", "50");
          c.put("compile_launch_ms", "100");
          c.put("receiver_ready_ms", s.equals("collective") && n > 1 ? Integer.toString(20 + rep) : "-1");
          cells.add(c);
        }
      }
    }
    Comparison.Mode mode = new Comparison.Mode("t", List.of(1, 16), 6, "p", List.of(), 7);
    List<Map<String, String>> bcasts = new ArrayList<>();
    for (int rep = 0; rep < 6; rep++) {
      for (int bytes : BenchLine.LINE_SIZES) {
        bcasts.add(Map.of("n", "4", "bytes", Integer.toString(bytes), "java_direct_us", "10", "envelope_us", "11"));
      }
    }
    String line = BenchLine.line(mode, BenchLine.figures(mode, cells, bcasts));
    assertEquals(true, line.contains(" goal_receiver_load_launch_ms_n16_le_50=met:22.5[20.0-25.0]"), line);
    assertEquals(true, line.contains(" goal_warm_over_cold_unpaired_n1_le_0.10=met:0.075[0.05-0.1]"), line);
    assertEquals(true, line.contains(" goal_warm_over_cold_unpaired_n16_le_0.25=missed:0.5[0.5-0.5]"), line);
    assertEquals(true, line.contains(" goal_naive_over_collective_n16_ge_6=missed:5.025[5.0-5.05]"), line);
    assertEquals(true, line.contains(" goal_collective_over_naive_n1_le_1.10=met:0.199[0.198-0.2]"), line);
    assertEquals(false, line.contains("_n2_"), "N = 2 did not run: its goals are not judged: " + line);
    assertEquals(true, line.contains(" goal_cpu_naive_over_cpu_collective_n16_ge_8=missed:5.025[5.0-5.05]"), line);
    assertEquals(true, line.contains(" goal_collective_over_limit_finished_n16_le_1.1=met:1.053[1.053-1.053]"), line);
    assertEquals(true, line.contains(" goal_root_compile_over_naive_compile_launch_n1_le_1.2=met:0.5[0.5-0.5]"), line);
    assertEquals(true, line.contains(" warm_over_cold_unpaired="), line);
  }

  @Test
  void resultsOfTheOlderBenchmarkGetNoGoalsAndSkipWhatTheyLack() {
    List<Map<String, String>> cells = new ArrayList<>();
    for (int rep = 0; rep < 6; rep++) {
      for (String s : List.of("naive", "collective", "limit", "collective-warm")) {
        Map<String, String> c = new java.util.HashMap<>(cell(16, s, rep, 100));
        c.put("compiles", "1");
        cells.add(c);
      }
    }
    Comparison.Mode mode = new Comparison.Mode("t", List.of(16), 6, "p", List.of(), 7);
    Map<String, Object> figures = BenchLine.figures(mode, cells, List.of());
    assertEquals(false, figures.containsKey("goals"));
    assertEquals(false, figures.containsKey("collective_over_limit_finished"));
    assertEquals(true, figures.containsKey("collective_over_limit"));
  }
}
