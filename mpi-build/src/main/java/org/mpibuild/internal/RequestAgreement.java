package org.mpibuild.internal;

import java.util.List;
import java.util.Map;
import org.mpibuild.RequestMismatchException;
import org.mpibuild.spi.Communicator;

/**
 * Whether every rank asked for the same build: one all-reduce of each rank's fingerprint; only on a
 * mismatch, an all-gather of the fingerprints lets every rank name the same differing ranks and throw the
 * same {@link RequestMismatchException}.
 */
final class RequestAgreement {
  private RequestAgreement() {}

  /** Returns when every rank passed {@code mine}'s equal; else throws the same exception on every rank. */
  static void agree(Communicator comm, RequestFingerprint mine) {
    if (RequestFingerprint.agreed(comm.allReduceMax(mine.agreementVector()))) {
      return;
    }
    byte[][] gathered = comm.allGather(mine.toBytes());
    RequestFingerprint[] all = new RequestFingerprint[gathered.length];
    for (int i = 0; i < all.length; i++) {
      all[i] = RequestFingerprint.fromBytes(gathered[i]);
    }
    int[] reference = new int[1];
    Map<Integer, List<String>> differing = RequestFingerprint.differingRanks(all, reference);
    StringBuilder msg = new StringBuilder("ranks asked for different kernels: ")
        .append(differing.size()).append(" of ").append(all.length).append(" ranks differ from rank ")
        .append(reference[0]);
    if (all[reference[0]].problem() != null) {
      msg.append(" (whose request is invalid: ").append(all[reference[0]].problem()).append(')');
    }
    for (Map.Entry<Integer, List<String>> e : differing.entrySet()) {
      msg.append("\n  rank ").append(e.getKey()).append(" differs in ").append(String.join(", ", e.getValue()));
      String p = all[e.getKey()].problem();
      if (p != null) {
        msg.append(" (").append(p).append(')');
      }
    }
    throw new RequestMismatchException(msg.toString(), differing);
  }
}
