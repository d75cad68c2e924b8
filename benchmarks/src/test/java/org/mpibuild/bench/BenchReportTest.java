package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The command line of {@link BenchReport}: a benchmark's {@code KEY=VALUE} settings. */
class BenchReportTest {
  @Test
  void settingsOverrideTheDefaultsAndKeepTheOthers() {
    Map<String, String> kv = BenchReport.settings(new String[] {"repo", "generic", "reps=12", "program=matmul24"},
        Map.of("reps", "8", "n", "512", "program", "matmul4"), "generic takes reps=N, n=ORDER and program=NAME");
    assertEquals(Map.of("reps", "12", "n", "512", "program", "matmul24"), kv);
  }

  @Test
  void anUnknownSettingOrOneWithoutAValueIsRefusedWithTheUsage() {
    Map<String, String> defaults = Map.of("reps", "8");
    IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
        () -> BenchReport.settings(new String[] {"repo", "generic", "ranks=4"}, defaults, "generic takes reps=N"));
    assertEquals("generic takes reps=N, not 'ranks=4'", unknown.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> BenchReport.settings(new String[] {"repo", "generic", "reps"}, defaults, "generic takes reps=N"));
  }
}
