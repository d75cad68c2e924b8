package org.mpibuild.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** The benchmarks' statistics: medians, paired ratios and distribution-free intervals for a median. */
final class Stats {
  private Stats() {}

  /** The median: the middle value, or the mean of the two middle values of an even count. */
  static double median(List<Double> xs) {
    List<Double> sorted = sorted(xs);
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  static double min(List<Double> xs) {
    return sorted(xs).get(0);
  }

  static double max(List<Double> xs) {
    List<Double> s = sorted(xs);
    return s.get(s.size() - 1);
  }

  /** Per-repetition ratios {@code a[i] / b[i]} of paired samples. */
  static List<Double> ratios(List<Double> a, List<Double> b) {
    if (a.size() != b.size()) {
      throw new IllegalArgumentException("paired samples of different sizes: " + a.size() + " and " + b.size());
    }
    List<Double> out = new ArrayList<>();
    for (int i = 0; i < a.size(); i++) {
      out.add(a.get(i) / b.get(i));
    }
    return out;
  }

  /**
   * A distribution-free confidence interval for the median: the order statistics {@code x(k)} and
   * {@code x(n+1-k)} with the largest k whose coverage, {@code 1 - 2 P(Binomial(n, 1/2) < k)}, is at least
   * {@code level}. Needs at least 6 values for 95% (with 6, the interval is the range, coverage 96.9%).
   *
   * @return low, high and the exact coverage
   */
  static Interval medianInterval(List<Double> xs, double level) {
    List<Double> s = sorted(xs);
    int n = s.size();
    int k = 0;
    while (k + 1 <= n / 2 && 1 - 2 * binomialCdf(n, k) >= level) {
      k++; // P(B <= k - 1) = P(B < k): the interval x(k)..x(n+1-k), 1-based
    }
    if (k == 0) {
      throw new IllegalArgumentException(n + " values are too few for a " + level + " interval of the median");
    }
    return new Interval(s.get(k - 1), s.get(n - k), 1 - 2 * binomialCdf(n, k - 1));
  }

  /**
   * The median's 95% interval ({@link #medianInterval}) from 6 values, else, with too few for one, their range
   * (its coverage then NaN): what the reports print in brackets beside a median.
   */
  static Interval intervalOrRange(List<Double> xs) {
    return xs.size() >= 6 ? medianInterval(xs, 0.95) : new Interval(min(xs), max(xs), Double.NaN);
  }

  /** P(Binomial(n, 1/2) <= k). */
  static double binomialCdf(int n, int k) {
    double sum = 0;
    double c = 1; // C(n, 0)
    for (int i = 0; i <= k; i++) {
      sum += c;
      c = c * (n - i) / (i + 1);
    }
    return sum / Math.pow(2, n);
  }

  /** The smallest multiple of {@code multiple} that is at least {@code n}. */
  static int roundUpToMultiple(int n, int multiple) {
    if (multiple <= 0) {
      throw new IllegalArgumentException("multiple " + multiple);
    }
    return Math.max(1, (n + multiple - 1) / multiple) * multiple;
  }

  /**
   * A goal's verdict on a median: {@code "met"} when it is at most (or, with {@code atMost} false, at least)
   * the bound, {@code "missed"} otherwise.
   */
  static String verdict(double median, double bound, boolean atMost) {
    return (atMost ? median <= bound : median >= bound) ? "met" : "missed";
  }

  /** An interval with its coverage. */
  record Interval(double low, double high, double coverage) {}

  private static List<Double> sorted(List<Double> xs) {
    if (xs.isEmpty()) {
      throw new IllegalArgumentException("no values");
    }
    List<Double> sorted = new ArrayList<>(xs);
    Collections.sort(sorted);
    return sorted;
  }
}
