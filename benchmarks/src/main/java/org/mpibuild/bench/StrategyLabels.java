package org.mpibuild.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** How the tables and charts name the strategies of the main comparison ({@link Comparison}). */
final class StrategyLabels {
  /** The strategies as the tables and chart name them, with the cells' strategy ids. */
  static final Map<String, String> LABELS = labels();

  private static Map<String, String> labels() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("naive", "naive (every rank compiles)");
    m.put("lock", "OCCA <=1.1 (lock directory)");
    m.put("lock-long", "OCCA <=1.1, compile > stale age");
    m.put("occa12", "OCCA >=1.2 (every rank compiles, atomic rename)");
    m.put("collective", "mpi-build, cold cache, shapes named");
    m.put("limit-finished", "physical limit (root: front end + named functions; raw bcast; load)");
    m.put("limit", "old limit, generic code (previous benchmark)");
    m.put("occa12-warm", "OCCA >=1.2, warm (unpaired)");
    m.put("collective-warm", "mpi-build, warm cache (unpaired)");
    return m;
  }

  /** The labels that differ for results of the benchmark before every phase was timed. */
  static final Map<String, String> OLD_LABELS = Map.of(
      "naive", "naive (every rank compiles and reads the binary)",
      "collective", "mpi-build, cold cache (no shapes named)");

  /** The label of {@code strategy}, for results of today's benchmark or ({@code old}) the earlier one. */
  static String label(String strategy, boolean old) {
    return old ? OLD_LABELS.getOrDefault(strategy, LABELS.get(strategy)) : LABELS.get(strategy);
  }

  /** Short names for the phase chart's categories. */
  static final Map<String, String> SHORT = Map.of("naive", "naive", "lock", "lock", "lock-long", "lock-long",
      "occa12", "occa12", "collective", "mpi-build", "limit-finished", "limit-fin.", "limit", "limit(old)",
      "occa12-warm", "occa12 warm", "collective-warm", "mpi-b. warm");

  /** The strategies of {@link #LABELS} that {@code cells} hold at any of {@code ns} (old results lack some). */
  static List<String> present(List<Map<String, String>> cells, List<Integer> ns) {
    List<String> out = new ArrayList<>();
    for (String s : LABELS.keySet()) {
      if (ns.stream().anyMatch(n -> !CellQueries.series(cells, n, s, "ms").isEmpty())) {
        out.add(s);
      }
    }
    return out;
  }

  private StrategyLabels() {}
}
