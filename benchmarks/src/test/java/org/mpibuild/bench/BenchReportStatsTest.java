package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The statistics BenchReport takes over the cells and rows the jobs wrote. */
class BenchReportStatsTest {
  static Map<String, String> cell(int n, String strategy, double ms) {
    return Map.of("n", Integer.toString(n), "program", "p", "strategy", strategy, "ms", Double.toString(ms));
  }

  @Test
  void theMedianOfTwoRepetitionsIsTheirMeanNotTheirMaximum() {
    List<Map<String, String>> cells = List.of(cell(4, "lock", 100), cell(4, "lock", 300), cell(4, "naive", 7),
        cell(8, "lock", 1));
    assertEquals(200.0, BenchReport.median(cells, 4, "p", "lock", "ms"));
    assertEquals(100.0, BenchReport.min(cells, 4, "p", "lock", "ms"));
    assertEquals(300.0, BenchReport.max(cells, 4, "p", "lock", "ms"));
    assertEquals(7.0, BenchReport.median(cells, 4, "p", "naive", "ms"));
    assertTrue(Double.isNaN(BenchReport.median(cells, 16, "p", "lock", "ms")), "no cell: no number");
  }

  @Test
  void broadcastRowsMedianBySize() {
    List<Map<String, String>> rows = List.of(Map.of("bytes", "1024", "us", "3"), Map.of("bytes", "1024", "us", "1"),
        Map.of("bytes", "1024", "us", "2"), Map.of("bytes", "1024", "us", "10"), Map.of("bytes", "2048", "us", "99"));
    assertEquals(2.5, BenchReport.medianOf(rows, 1024, "us"));
    assertEquals(99.0, BenchReport.medianOf(rows, 2048, "us"));
  }
}
