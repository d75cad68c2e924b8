package org.mpibuild.internal;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.SortedMap;
import java.util.TreeMap;
import org.mpibuild.spi.Communicator;

/** "Did any rank fail, and why?" as a collective, so that every rank reaches the same verdict. */
public final class Agreement {
  private Agreement() {}

  /**
   * Returns the failure reason of every rank that failed, by rank; empty when none did. One all-reduce
   * when all succeeded, plus one all-gather of the reasons otherwise. Collective.
   *
   * @param localFailure this rank's reason, or null if it succeeded
   */
  public static SortedMap<Integer, String> failures(Communicator comm, String localFailure) {
    if (comm.allReduceMax(new int[] {localFailure == null ? 0 : 1})[0] == 0) {
      return Collections.emptySortedMap();
    }
    byte[] mine = localFailure == null ? new byte[0] : nonEmpty(localFailure).getBytes(StandardCharsets.UTF_8);
    byte[][] all = comm.allGather(mine);
    SortedMap<Integer, String> failures = new TreeMap<>();
    for (int r = 0; r < all.length; r++) {
      if (all[r].length > 0) {
        failures.put(r, new String(all[r], StandardCharsets.UTF_8));
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

  private static String nonEmpty(String s) {
    return s.isEmpty() ? "(no reason given)" : s;
  }
}
