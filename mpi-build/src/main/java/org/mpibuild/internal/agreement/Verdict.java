package org.mpibuild.internal.agreement;

import java.util.Collections;
import java.util.SortedMap;
import java.util.TreeMap;
import org.mpibuild.spi.Communicator;

/** "Did any rank fail, and why?" as a collective, so that every rank reaches the same verdict. */
public final class Verdict {
  private Verdict() {}

  /**
   * Returns the failure reason of every rank that failed, by rank; empty when none did. One all-reduce
   * when all succeeded, plus one all-gather of the reasons otherwise. Collective.
   *
   * @param localFailure this rank's reason, or null if it succeeded
   */
  public static SortedMap<Integer, String> failures(Communicator comm, String localFailure) {
    SortedMap<Integer, String> out = new TreeMap<>();
    failures(comm, localFailure == null ? null : RankFailure.problem(localFailure))
        .forEach((rank, f) -> out.put(rank, f.reason()));
    return out;
  }

  /**
   * Returns every failed rank's report, by rank; empty when none failed. As {@link #failures(Communicator,
   * String)}, with typed reports. Collective.
   */
  public static SortedMap<Integer, RankFailure> failures(Communicator comm, RankFailure localFailure) {
    if (comm.allReduceMax(new int[] {localFailure == null ? 0 : 1})[0] == 0) {
      return Collections.emptySortedMap();
    }
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
