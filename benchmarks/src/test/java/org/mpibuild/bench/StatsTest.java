package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

  @Test
  void minAndMax() {
    assertEquals(1.0, Stats.min(List.of(3.0, 1.0, 2.0)));
    assertEquals(3.0, Stats.max(List.of(3.0, 1.0, 2.0)));
  }

  @Test
  void ratiosArePairedByRepetition() {
    assertEquals(List.of(2.0, 0.5), Stats.ratios(List.of(4.0, 1.0), List.of(2.0, 2.0)));
    assertThrows(IllegalArgumentException.class, () -> Stats.ratios(List.of(1.0), List.of(1.0, 2.0)));
  }

  @Test
  void binomialProbabilities() {
    assertEquals(1.0 / 128, Stats.binomialCdf(7, 0), 1e-12);
    assertEquals(8.0 / 128, Stats.binomialCdf(7, 1), 1e-12);
    assertEquals(1.0, Stats.binomialCdf(7, 7), 1e-12);
  }

  @Test
  void medianIntervalUsesOrderStatisticsWithAtLeastTheCoverageAsked() {
    List<Double> seven = List.of(7.0, 1.0, 6.0, 2.0, 5.0, 3.0, 4.0);
    Stats.Interval i = Stats.medianInterval(seven, 0.95);
    // n = 7: x(2)..x(6) covers only 1 - 2 * 8/128 = 87.5%, so the interval is the range, 98.4%.
    assertEquals(1.0, i.low());
    assertEquals(7.0, i.high());
    assertEquals(1 - 2.0 / 128, i.coverage(), 1e-12);
    List<Double> twenty = new java.util.ArrayList<>();
    for (int x = 1; x <= 20; x++) {
      twenty.add((double) x);
    }
    // n = 20: P(B <= 5) = 2.07%, so x(6)..x(15) covers 95.9%; x(7)..x(14) would cover only 88.5%.
    Stats.Interval j = Stats.medianInterval(twenty, 0.95);
    assertEquals(6.0, j.low());
    assertEquals(15.0, j.high());
    assertEquals(1 - 2 * Stats.binomialCdf(20, 5), j.coverage(), 1e-12);
    assertThrows(IllegalArgumentException.class, () -> Stats.medianInterval(List.of(1.0, 2.0, 3.0, 4.0, 5.0), 0.95),
        "five values cannot give 95%");
  }

  @Test
  void belowSixValuesTheBracketIsTheRangeAndFromSixTheMediansInterval() {
    Stats.Interval five = Stats.intervalOrRange(List.of(3.0, 1.0, 5.0, 2.0, 4.0));
    assertEquals(1.0, five.low());
    assertEquals(5.0, five.high());
    assertTrue(Double.isNaN(five.coverage()));
    List<Double> nine = List.of(9.0, 1.0, 8.0, 2.0, 7.0, 3.0, 6.0, 4.0, 5.0);
    assertEquals(Stats.medianInterval(nine, 0.95), Stats.intervalOrRange(nine));
    assertEquals(2.0, Stats.intervalOrRange(nine).low(), "not the range: x(2) of 9 at 95%");
  }

  @Test
  void repetitionsRoundUpToAMultipleOfTheStrategies() {
    assertEquals(6, Stats.roundUpToMultiple(6, 6));
    assertEquals(12, Stats.roundUpToMultiple(7, 6));
    assertEquals(6, Stats.roundUpToMultiple(1, 6));
  }

  @Test
  void verdictsOnTheMedian() {
    assertEquals("met", Stats.verdict(0.10, 0.10, true), "the bound itself meets an at-most goal");
    assertEquals("missed", Stats.verdict(0.11, 0.10, true));
    assertEquals("met", Stats.verdict(4.0, 4, false));
    assertEquals("missed", Stats.verdict(3.9, 4, false));
  }
}
