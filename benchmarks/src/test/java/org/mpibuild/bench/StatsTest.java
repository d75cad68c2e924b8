package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class StatsTest {
  @Test
  void medianOfOddAndEvenCounts() {
    assertEquals(2.0, Stats.median(List.of(3.0, 1.0, 2.0)));
    assertEquals(2.5, Stats.median(List.of(4.0, 1.0, 3.0, 2.0)), "the mean of the middle two, not the upper one");
    assertEquals(1.5, Stats.median(List.of(2.0, 1.0)), "with two values, not the maximum");
    assertThrows(IllegalArgumentException.class, () -> Stats.median(List.of()));
  }
}
