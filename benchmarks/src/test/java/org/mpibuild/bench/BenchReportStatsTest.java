package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

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
    assertEquals(List.of(100.0, 300.0), Comparison.series(cells, 4, "naive", "ms"));
    // Paired: 100/50 and 300/100, not the ratio of medians (200/75).
    assertEquals(List.of(2.0, 3.0), Comparison.ratios(cells, 4, Comparison.RATIOS.get(0)));
  }

  @Test
  void aMissingPartnerIsAnErrorNotAGuess() {
    List<Map<String, String>> cells = List.of(cell(4, "naive", 0, 100), cell(4, "naive", 1, 100),
        cell(4, "collective", 0, 50));
    assertThrows(IllegalArgumentException.class, () -> Comparison.ratios(cells, 4, Comparison.RATIOS.get(0)));
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
      for (int bytes : Comparison.LINE_SIZES) {
        bcasts.add(Map.of("n", "4", "bytes", Integer.toString(bytes), "java_direct_us", "10",
            "envelope_us", Integer.toString(11 + rep)));
      }
    }
    Comparison.Mode mode = new Comparison.Mode("t", List.of(16), 7, "p", Comparison.LINE_SIZES, 7);
    Map<String, Object> figures = Comparison.lineFigures(mode, cells, bcasts);
    @SuppressWarnings("unchecked")
    Map<String, Object> naive = (Map<String, Object>) figures.get("naive_over_collective");
    assertEquals(1.3, naive.get("median"));
    assertEquals(1.0, naive.get("ci95_low"));
    assertEquals(1.6, naive.get("ci95_high"));
    String line = Comparison.benchLine(mode, figures);
    assertEquals(true, line.startsWith("bench: ranks=16 reps=7 naive_over_collective=1.3[1.0-1.6]"), line);
    assertEquals(true, line.contains("envelope_over_raw_1MiB=1.4[1.1-1.7]"), line);
    assertEquals(true, line.contains("lock_long_compiles=2.0[2.0-2.0]"), line);
  }
}
