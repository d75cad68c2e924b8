package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Both charts draw from cells as the jobs write them, phases included. */
class ChartTest {
  @Test
  void drawsTimeToReadyAndPhases(@TempDir Path dir) throws Exception {
    System.setProperty("java.awt.headless", "true");
    List<Map<String, String>> cells = new ArrayList<>();
    for (int n : List.of(1, 2)) {
      for (int rep = 0; rep < 6; rep++) {
        for (String s : List.of("naive", "lock", "lock-long", "occa12", "collective", "limit-finished",
            "collective-warm", "occa12-warm")) {
          Map<String, String> c = new HashMap<>(Map.of("n", Integer.toString(n), "strategy", s, "rep",
              Integer.toString(rep), "ms", Double.toString(1000 + 10 * rep), "cpu_s", "1.5"));
          for (String p : Phases.NAMES) {
            c.put("phase_" + p + "_ms", Double.toString(100 + rep));
          }
          c.put("phase_other_ms", "3");
          cells.add(c);
        }
      }
    }
    Comparison.Mode mode = new Comparison.Mode("t", List.of(1, 2), 6, "matmul4", List.of(), 7);
    Map<String, Object> machine = Map.of("cores", 2, "cpu", "test");
    Chart.write(mode, cells, machine, dir.resolve("time.png"));
    Chart.writePhases(mode, cells, machine, dir.resolve("phases.png"));
    assertTrue(Files.size(dir.resolve("time.png")) > 1000);
    assertTrue(Files.size(dir.resolve("phases.png")) > 1000);
  }
}
