package org.mpibuild.internal.protocol;

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import org.mpibuild.KernelLoadException;
import org.mpibuild.internal.agreement.RankFailure;
import org.mpibuild.internal.agreement.Verdict;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.LoadedProgram;

/**
 * Loads binaries as programs: checked against this rank's backend and target first, on this rank alone or
 * agreed on by every rank, so that a rank that cannot load makes every rank throw the same exception.
 */
public final class ProgramLoader {
  private ProgramLoader() {}

  /**
   * Loads an envelope's binary with {@code backend} after checking that it was built by the same backend
   * for the same target. Throws with a message for a person if not, or if the device refuses it.
   */
  public static LoadedProgram loadChecked(Backend backend, Envelope envelope) {
    Envelope.Metadata meta = envelope.metadata();
    if (!meta.backend().equals(backend.id())) {
      throw new IllegalStateException("binary is for backend '" + meta.backend() + "', this rank uses '"
          + backend.id() + "'");
    }
    if (!backend.canLoad(meta.target())) {
      throw new IllegalStateException("binary was built for target [" + meta.target()
          + "], this rank's device is [" + backend.target() + "]");
    }
    Optional<ByteBuffer> whole = envelope.payload().contiguous();
    return whole.isPresent() ? backend.load(whole.get(), meta.kernelNames())
        : backend.load(envelope.payload().toByteArray(), meta.kernelNames());
  }

  /**
   * Loads binary data on this rank only (not collective), timing the load.
   *
   * @throws KernelLoadException naming this rank, if the data is for another backend or target, or the
   *     device refuses it
   */
  public static Outcome loadOnThisRank(Backend backend, int rank, Envelope e) {
    long t0 = System.nanoTime();
    LoadedProgram program;
    try {
      program = loadChecked(backend, e);
    } catch (RuntimeException ex) {
      throw new KernelLoadException("loading binary data failed on rank " + rank + ": " + ex.getMessage(),
          Map.of(rank, String.valueOf(ex.getMessage())));
    }
    return new Outcome(program, e, new BuildStatsBuilder().rank(rank).root(rank).loadNanos(System.nanoTime() - t0)
        .binaryBytes(e.payload().length()).build());
  }

  /**
   * Whether every rank of the job succeeded; if not, every rank releases its programs and throws the
   * same exception: a build failure of some target group if there was one, else a load failure.
   */
  static void agreeOnLoad(Communicator comm, LoadedProgram[] programs, RankFailure failure) {
    SortedMap<Integer, RankFailure> reports = Verdict.failures(comm, failure);
    if (reports.isEmpty()) {
      return;
    }
    for (LoadedProgram p : programs) {
      if (p != null) {
        p.close();
      }
    }
    // The lowest failing rank's build failure, if any rank reported one: the same on every rank.
    for (RankFailure f : reports.values()) {
      if (f.kind() == RankFailure.Kind.BUILD) {
        throw f.toException();
      }
    }
    SortedMap<Integer, String> failures = new TreeMap<>();
    reports.forEach((rank, f) -> failures.put(rank, f.reason()));
    throw new KernelLoadException("the kernel could not be loaded on " + failures.size() + " of " + comm.size()
        + " ranks " + failures.keySet() + Verdict.describe(failures), failures);
  }
}
