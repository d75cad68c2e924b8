package org.mpibuild.bench;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * Queries over the main comparison's cells (one line of a {@link Bench} job each: {@code n}, {@code strategy},
 * {@code rep} and the fields it measured) and its broadcast rows.
 */
final class CellQueries {
  private CellQueries() {}

  /** Whether every cell of {@code strategy} at N has {@code field}. */
  static boolean has(List<Map<String, String>> cells, int n, String strategy, String field) {
    boolean any = false;
    for (Map<String, String> c : cells) {
      if (c.get("n").equals(Integer.toString(n)) && c.get("strategy").equals(strategy)) {
        if (!c.containsKey(field)) {
          return false;
        }
        any = true;
      }
    }
    return any;
  }

  /** A field of one strategy's cells at N, ordered by repetition. */
  static List<Double> series(List<Map<String, String>> cells, int n, String strategy, String field) {
    List<Map<String, String>> rows = new ArrayList<>();
    for (Map<String, String> c : cells) {
      if (c.get("n").equals(Integer.toString(n)) && c.get("strategy").equals(strategy)) {
        rows.add(c);
      }
    }
    rows.sort(Comparator.comparingInt(c -> Integer.parseInt(c.get("rep"))));
    List<Double> out = new ArrayList<>();
    rows.stream().filter(r -> r.containsKey(field)).forEach(r -> out.add(Double.parseDouble(r.get(field))));
    return out;
  }

  /** A field of one strategy's cells at N by repetition number, in repetition order. */
  static Map<String, Double> byRep(List<Map<String, String>> cells, int n, String strategy, String field) {
    Map<String, Double> out = new java.util.TreeMap<>(Comparator.comparingInt(Integer::parseInt));
    for (Map<String, String> c : cells) {
      if (c.get("n").equals(Integer.toString(n)) && c.get("strategy").equals(strategy) && c.containsKey(field)) {
        out.put(c.get("rep"), Double.parseDouble(c.get(field)));
      }
    }
    return out;
  }

  /** The broadcast rows of one size at N ranks, ordered by repetition. */
  static List<Map<String, String>> bcastRows(List<Map<String, String>> rows, int n, int bytes) {
    List<Map<String, String>> out = new ArrayList<>();
    for (Map<String, String> r : rows) {
      if (r.get("n").equals(Integer.toString(n)) && r.get("bytes").equals(Integer.toString(bytes))) {
        out.add(r);
      }
    }
    return out;
  }

  static List<Double> column(List<Map<String, String>> rows, String field) {
    List<Double> out = new ArrayList<>();
    rows.forEach(r -> out.add(Double.parseDouble(r.get(field))));
    return out;
  }

  /** The median of a field, or -1 where the cells lack it. */
  static double medianOr(List<Map<String, String>> cells, int n, String strategy, String field) {
    return has(cells, n, strategy, field) ? Stats.median(series(cells, n, strategy, field)) : -1;
  }

  /** The cells of {@code strategy} at N whose receiver figure is a measurement (not -1). */
  static List<Map<String, String>> receivers(List<Map<String, String>> cells, int n, String strategy) {
    List<Map<String, String>> out = new ArrayList<>();
    for (Map<String, String> c : cells) {
      if (c.get("n").equals(Integer.toString(n)) && c.get("strategy").equals(strategy)
          && c.containsKey("receiver_ready_ms") && Double.parseDouble(c.get("receiver_ready_ms")) >= 0) {
        out.add(c);
      }
    }
    return out;
  }
}
