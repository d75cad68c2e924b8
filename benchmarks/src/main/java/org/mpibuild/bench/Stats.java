package org.mpibuild.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** The benchmarks' statistics. */
final class Stats {
  private Stats() {}

  /** The median: the middle value, or the mean of the two middle values of an even count. */
  static double median(List<Double> xs) {
    if (xs.isEmpty()) {
      throw new IllegalArgumentException("the median of no values");
    }
    List<Double> sorted = new ArrayList<>(xs);
    Collections.sort(sorted);
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }
}
