package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BenchJsonTest {
  @Test
  void cellsWrittenByTheJobsReadBackForTheReport() {
    String jsonl = BenchJson.line("n", 4, "program", "saxpy \"quoted\"", "strategy", "limit", "rep", 0,
        "ms", BenchJson.round(12.34567, 3), "binary_bytes", 49152L)
        + BenchJson.line("n", 8, "program", "p", "strategy", "naive", "rep", 1, "ms", 3.0, "binary_bytes", 1L);
    List<Map<String, String>> cells = BenchJson.readLines(jsonl);
    assertEquals(2, cells.size());
    assertEquals("4", cells.get(0).get("n"));
    assertEquals("saxpy \"quoted\"", cells.get(0).get("program"));
    assertEquals(12.346, Double.parseDouble(cells.get(0).get("ms")));
    assertEquals("49152", cells.get(0).get("binary_bytes"));
  }

  @Test
  void reportsKeepNumbersAsNumbers() {
    String report = BenchJson.write(BenchJson.typed(Map.of("one_rank_s", "1.250", "mode", "quick")));
    assertTrue(report.contains("\"one_rank_s\":1.250") && report.contains("\"mode\":\"quick\""), report);
  }

  @Test
  void aStrategyIsRenamedInItsLinesOnly() {
    String jsonl = BenchJson.line("n", 16, "strategy", "lock-long", "rep", 0, "ms", 2434.85)
        + BenchJson.line("n", 16, "strategy", "naive", "rep", 0, "ms", 14700.5);
    List<Map<String, String>> cells = BenchJson.readLines(BenchJson.withStrategy(jsonl, "lock-long", "lock-long-void"));
    assertEquals(List.of("lock-long-void", "naive"), cells.stream().map(c -> c.get("strategy")).toList());
    assertEquals(2434.85, Double.parseDouble(cells.get(0).get("ms")));
    assertEquals("16", cells.get(1).get("n"));
  }
}
