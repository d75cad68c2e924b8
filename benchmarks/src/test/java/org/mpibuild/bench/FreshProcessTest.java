package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class FreshProcessTest {
  @Test
  void aJobIsReadyWhenItsLatestRankIs() {
    String out = "[1,0]<stdout>:FRESH ready_ms=2400\nother\n[1,1]<stdout>:FRESH ready_ms=2650\n";
    assertEquals(2650, FreshProcess.readiness(out, 2, "mpi-build"));
    assertEquals(1611, FreshProcess.readiness("FRESH ready_ms=1611\n", 1, "naive"));
    assertEquals(3815, FreshProcess.readiness("FRESH ready_ms=3790FRESH ready_ms=3815\n", 2, "naive"));
  }

  @Test
  void aRankThatPrintedNothingFailsTheJobsMeasurement() {
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> FreshProcess.readiness("FRESH ready_ms=2400\n", 2, "naive"));
    assertEquals(true, e.getMessage().startsWith("naive printed 1 FRESH lines, not 2"), e.getMessage());
  }
}
