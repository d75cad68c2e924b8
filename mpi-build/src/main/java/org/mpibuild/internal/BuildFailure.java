package org.mpibuild.internal;

import java.util.Map;
import java.util.SortedMap;

/**
 * A failed build of one target group, told to the ranks of the other groups. With the job split by
 * target, only a group's own ranks receive its error envelope; the failure agreement then carries it to
 * every rank, encoded as a reason, so that every rank throws the same exception with the same build log.
 */
final class BuildFailure {
  private static final String MARK = "\u0000build-failure\u0000";
  private static final String SEP = "\u0000";

  private BuildFailure() {}

  /** The reason a rank of the failed group reports. */
  static String encode(Envelope failed, String what, int builtOn) {
    Envelope.Metadata m = failed.metadata();
    return MARK + failed.status().name() + SEP + builtOn + SEP + m.target() + SEP + what + SEP + m.error() + SEP
        + m.buildLog();
  }

  /**
   * The exception every rank throws for the lowest failing rank's build failure (the same on every rank),
   * or null when no rank reported one.
   */
  static RuntimeException decode(SortedMap<Integer, String> failures) {
    for (Map.Entry<Integer, String> e : failures.entrySet()) {
      if (!e.getValue().startsWith(MARK)) {
        continue;
      }
      String[] f = e.getValue().substring(MARK.length()).split(SEP, 6);
      Envelope.Status status = Envelope.Status.valueOf(f[0]);
      int builtOn = Integer.parseInt(f[1]);
      String what = f[3].equals("the request") ? "" : f[3] + ", ";
      String error = f[4] + " (" + what + "for target [" + f[2] + "])";
      Envelope.Metadata meta = new Envelope.Metadata("", f[2], java.util.List.of(), "", f[5], error, "");
      return CollectiveBuild.failure(status, meta, builtOn);
    }
    return null;
  }
}
