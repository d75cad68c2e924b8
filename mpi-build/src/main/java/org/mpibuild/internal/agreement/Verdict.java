package org.mpibuild.internal.agreement;

import java.util.Collections;
import java.util.SortedMap;
import java.util.TreeMap;
import org.mpibuild.spi.Communicator;

/** "Did any rank fail, and why?" as a collective, so that every rank reaches the same verdict. */
public final class Verdict {
  private Verdict() {}

  /**
   * Every failed rank's reason, by rank, where an all-reduce of the caller's has already shown that some rank failed
   * (the all-gather of {@link #failures} only). Collective.
   */
  public static SortedMap<Integer, String> reasons(Communicator comm, String localFailure) {
    return reasons(reports(comm, localFailure == null ? null : RankFailure.problem(localFailure)));
  }

  private static SortedMap<Integer, String> reasons(SortedMap<Integer, RankFailure> reports) {
    SortedMap<Integer, String> out = new TreeMap<>();
    reports.forEach((rank, f) -> out.put(rank, f.reason()));
    return out;
  }

  /**
   * Returns every failed rank's report, by rank; empty when none failed. One all-reduce when all succeeded, plus
   * one all-gather of the reports otherwise. Collective.
   *
   * @param localFailure this rank's report, or null if it succeeded
   */
  public static SortedMap<Integer, RankFailure> failures(Communicator comm, RankFailure localFailure) {
    if (comm.allReduceMax(new int[] {localFailure == null ? 0 : 1})[0] == 0) {
      return Collections.emptySortedMap();
    }
    return reports(comm, localFailure);
  }

  /** Every failed rank's report, by rank, once some rank is known to have failed: one all-gather. Collective. */
  private static SortedMap<Integer, RankFailure> reports(Communicator comm, RankFailure localFailure) {
    byte[][] all = comm.allGather(localFailure == null ? new byte[0] : localFailure.encode());
    SortedMap<Integer, RankFailure> failures = new TreeMap<>();
    for (int r = 0; r < all.length; r++) {
      if (all[r].length > 0) {
        failures.put(r, RankFailure.decode(all[r]));
      }
    }
    return failures;
  }

  /** Formats failures as indented lines, one per rank. */
  public static String describe(SortedMap<Integer, String> failures) {
    StringBuilder sb = new StringBuilder();
    failures.forEach((r, why) -> sb.append("\n  rank ").append(r).append(": ").append(why));
    return sb.toString();
  }
}
