package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class FreshProcessTest {
  @Test
  void aJobIsReadyWhenItsLatestRankIsAndCostsAllItsRanksCpu() {
    String out = "[1,0]<stdout>:FRESH ready_ms=2400 cpu_ms=3000\nother\n[1,1]<stdout>:FRESH ready_ms=2650 cpu_ms=900\n";
    assertEquals(new FreshProcess.Marks(2650, 3900), FreshProcess.marks(out, 2, "mpi-build"));
    assertEquals(new FreshProcess.Marks(1611, 1700), FreshProcess.marks("FRESH ready_ms=1611 cpu_ms=1700\n", 1,
        "naive"));
    assertEquals(new FreshProcess.Marks(3815, 20), FreshProcess.marks(
        "FRESH ready_ms=3790 cpu_ms=10FRESH ready_ms=3815 cpu_ms=10\n", 2, "naive"));
  }

  @Test
  void aRankThatPrintedNothingFailsTheJobsMeasurement() {
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> FreshProcess.marks("FRESH ready_ms=2400 cpu_ms=1\n", 2, "naive"));
    assertTrue(e.getMessage().startsWith("naive printed 1 FRESH lines, not 2"), e.getMessage());
  }
}
