package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The ffm-abi report reads the same lines from the C and the Java job, and refuses a job that missed one. */
class FfmAbiReportTest {
  static final String JOB = """
      some MPI banner
      bcast bytes=1048576 median_us=170.20
      bcast bytes=16777216 median_us=2520.80
      bcast bytes=67108864 median_us=9975.74
      pingpong bytes=8 median_half_rtt_us=0.520
      binding FFM_(STANDARD_ABI_1.0,_MPICH)
      """;

  @Test
  void everyMeasureIsReadByName() {
    Map<String, Double> m = FfmAbiReport.parse(JOB);
    assertEquals(List.of("bcast 1MiB", "bcast 16MiB", "bcast 64MiB", "pingpong 8B"), List.copyOf(m.keySet()));
    assertEquals(2520.80, m.get("bcast 16MiB"));
    assertEquals(0.520, m.get("pingpong 8B"));
  }

  @Test
  void aJobWithoutOneOfTheMeasuresIsAnError() {
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> FfmAbiReport.parse(JOB.replace("pingpong bytes=8 median_half_rtt_us=0.520\n", "")));
    assertTrue(e.getMessage().contains("pingpong 8B"), e.getMessage());
  }

  @Test
  void columnsPairTheRepetitions() {
    List<Map<String, Double>> rows = List.of(Map.of("pingpong 8B", 1.0), Map.of("pingpong 8B", 3.0));
    assertEquals(List.of(1.0, 3.0), FfmAbiReport.column(rows, "pingpong 8B"));
  }
}
