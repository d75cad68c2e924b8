package org.mpibuild.internal.agreement;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.mpibuild.RequestMismatchException;
import org.mpibuild.internal.comm.Backoff;
import org.mpibuild.internal.comm.DeadlineAllReduce;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.spi.Communicator;

/**
 * Whether every rank asked for the same build: one all-reduce of each rank's fingerprint, which is also where a
 * rank that never comes is found ({@link DeadlineAllReduce}); only on a
 * mismatch, an all-gather of the fingerprints lets every rank name the same differing ranks and throw the
 * same {@link RequestMismatchException}.
 */
public final class RequestAgreement {
  private RequestAgreement() {}

  /** Returns when every rank passed {@code mine}'s equal; else throws the same exception on every rank. */
  public static void agree(Communicator comm, RequestFingerprint mine, Duration deadline, Backoff waiting,
      Supplier<String> what) {
    agree(comm, mine, deadline, waiting, what, "ranks asked for different kernels", "whose request is invalid");
  }

  /**
   * Returns when every rank's settings that shape the protocol equal this rank's; else throws the same
   * {@link RequestMismatchException} on every rank, naming each differing setting and rank. Collective.
   */
  public static void agreeOnSettings(Communicator comm, Settings s) {
    Map<String, String> shaping = new LinkedHashMap<>();
    shaping.put("MPI_BUILD_NODE_CACHE_DIR", s.cache().enabled() && s.cache().nodeDir() != null ? "set" : "unset");
    shaping.put("MPI_BUILD_BATCH_RANKS", Integer.toString(s.batchRanks()));
    shaping.put("MPI_BUILD_CHUNK_BYTES", Integer.toString(s.chunkBytes()));
    shaping.put("MPI_BUILD_PROGRESS", s.progress().name());
    shaping.put("MPI_BUILD_COLLECTIVE_TIMEOUT", deadlineText(s.collectiveTimeout()));
    String note = "its settings: " + shaping.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
        .collect(Collectors.joining(", "));
    agree(comm, RequestFingerprint.of(shaping, note), s.collectiveTimeout(), s.waiting(), () -> "the opening of mpi-build",
        "ranks run with different settings that decide which collectives a build makes", "with");
  }

  /** A deadline as settings write it: {@code off}, {@code 600s}, {@code 2500ms}. */
  static String deadlineText(Duration d) {
    if (d.isZero()) {
      return "off";
    }
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + "s" : d.toMillis() + "ms";
  }

  private static void agree(Communicator comm, RequestFingerprint mine, Duration deadline, Backoff waiting,
      Supplier<String> what, String subject, String noteIntro) {
    if (RequestFingerprint.agreed(DeadlineAllReduce.allReduceMax(comm, mine.agreementVector(), deadline, waiting, what))) {
      return;
    }
    byte[][] gathered = comm.allGather(mine.toBytes());
    RequestFingerprint[] all = new RequestFingerprint[gathered.length];
    for (int i = 0; i < all.length; i++) {
      all[i] = RequestFingerprint.fromBytes(gathered[i], mine.names());
    }
    int[] reference = new int[1];
    Map<Integer, List<String>> differing = RequestFingerprint.differingRanks(all, reference);
    StringBuilder msg = new StringBuilder(subject).append(": ")
        .append(differing.size()).append(" of ").append(all.length).append(" ranks differ from rank ")
        .append(reference[0]);
    if (all[reference[0]].problem() != null) {
      msg.append(" (").append(noteIntro).append(' ').append(all[reference[0]].problem()).append(')');
    }
    for (Map.Entry<Integer, List<String>> e : differing.entrySet()) {
      msg.append("\n  rank ").append(e.getKey()).append(" differs in ").append(String.join(", ", e.getValue()));
      String p = all[e.getKey()].problem();
      if (p != null) {
        msg.append(" (").append(p).append(')');
      }
    }
    String threads = differentThreads(comm.allGather(callerBytes()));
    throw new RequestMismatchException(threads == null ? msg.toString() : threads + msg, differing);
  }

  /** This rank's calling thread and the threads its instance refused during the call, for the gather. */
  private static byte[] callerBytes() {
    List<String> parts = new ArrayList<>();
    parts.add(CallingThread.name());
    parts.addAll(CallingThread.refused());
    return String.join("\u0000", parts).getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Where ranks made the call from threads of different names, the explanation that leads the message (one
   * instance called from two threads at once, the ranks admitting different threads first); else null.
   * Every rank computes the same from the same gather.
   */
  static String differentThreads(byte[][] gathered) {
    Set<String> names = new LinkedHashSet<>();
    StringBuilder ranks = new StringBuilder();
    for (int r = 0; r < gathered.length; r++) {
      String[] parts = new String(gathered[r], StandardCharsets.UTF_8).split("\u0000", -1);
      if (parts[0].isEmpty()) {
        return null; // a call from no program's thread: nothing to tell
      }
      names.add(parts[0]);
      ranks.append(r == 0 ? "" : ", ").append("rank ").append(r).append(" on thread '").append(parts[0]).append('\'');
      if (parts.length > 1) {
        ranks.append(" (it refused ").append(Arrays.stream(parts, 1, parts.length).map(t -> "'" + t + "'")
            .collect(Collectors.joining(", "))).append(')');
      }
    }
    if (names.size() < 2) {
      return null;
    }
    return "the ranks made this call on different threads: " + ranks + ". One MpiBuild serves one thread at a "
        + "time; where two threads of a rank call it at once, the ranks may admit different threads first, and "
        + "their calls then differ: give each thread an MpiBuild of its own (with a communicator of its own), or "
        + "order the calls. What differs: ";
  }
}
