package org.mpibuild.internal.startup;

import java.util.SortedMap;
import org.mpibuild.BackendUnavailableException;
import org.mpibuild.internal.agreement.RequestAgreement;
import org.mpibuild.internal.agreement.RequestFingerprint;
import org.mpibuild.internal.agreement.Verdict;
import org.mpibuild.internal.cache.Caches;
import org.mpibuild.internal.comm.LogContext;
import org.mpibuild.internal.settings.SettingNames;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.ForwardingCommunicator;
import org.mpibuild.spi.Placement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What {@code MpiBuildBuilder#build} does: open MPI (or take the caller's communicator), agree on the
 * settings, split the communicator by node, open the backend on every rank (telling it where the rank runs
 * on its node), agree that it runs everywhere and on the job's targets (one all-reduce), and open the caches.
 * Collective.
 *
 * @param comm the communicator the instance owns (a borrowed one is wrapped so that closing it does nothing)
 * @param backend the open backend
 * @param caches the caches
 * @param targets the job's targets
 * @param nodeRanks how many ranks of the communicator run on this rank's node
 */
public record Startup(Communicator comm, Backend backend, Caches caches, JobTargets targets, int nodeRanks)
    implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Startup.class);

  /**
   * Opens everything on every rank; if the backend cannot run on some rank, every rank throws, naming the
   * ranks and reasons, and nothing stays open.
   *
   * @param communicator the caller's communicator, or null for the world (or local mode)
   * @param backend an opened backend, or null to open the one the settings name
   */
  public static Startup open(Settings settings, Communicator communicator, Backend backend) {
    SettingNames.warnOnce(settings.source());
    boolean ownsComm = communicator == null;
    Communicator comm = ownsComm ? MpiBindings.openWorld(settings.mode(), settings.binding())
        : new Borrowed(communicator);
    try (LogContext ignored = LogContext.rank(comm.rank())) {
      try {
        RequestAgreement.agreeOnSettings(comm, settings); // first: they shape every collective after it
      } catch (RuntimeException e) {
        if (backend != null) {
          backend.close();
        }
        throw e;
      }
      Communicator node = comm.splitByNode();
      Backend b = backend;
      String failure = null;
      if (b == null) {
        try {
          b = Backends.open(settings.backend(), settings.source(), new Placement(node.rank(), node.size()));
        } catch (RuntimeException | LinkageError e) {
          failure = e.getMessage() == null ? e.toString() : e.getMessage();
        }
      }
      int[] maxima = agreeOnBackend(comm, node, b, failure);
      int nodeRanks = node.size();
      Caches caches = Caches.of(settings.cache(), node);
      JobTargets targets = JobTargets.agreed(comm, b, maxima, 1);
      log.debug("mpi-build ready: {} on {}, target {} ({} in the job), cache {}", b.id(), comm.description(),
          b.target(), targets.distinct().size(), settings.cache().enabled() ? settings.cache().dir() : "off");
      return new Startup(comm, b, caches, targets, nodeRanks);
    } catch (RuntimeException e) {
      if (ownsComm) {
        comm.close();
      }
      throw e;
    }
  }

  /**
   * One all-reduce says whether the backend opened on every rank and whether every rank has the same target (a rank
   * whose backend failed adds zeros: its target is never read); returns its maxima, for {@link JobTargets#agreed}.
   * Where any rank failed, every rank throws the same exception, naming the ranks and their reasons, its backend and
   * node communicator closed.
   */
  private static int[] agreeOnBackend(Communicator comm, Communicator node, Backend b, String opening) {
    String failure = opening;
    try {
      int[] mine = new int[1 + RequestFingerprint.AGREEMENT_INTS];
      if (failure == null) {
        try {
          System.arraycopy(JobTargets.agreementVector(b), 0, mine, 1, RequestFingerprint.AGREEMENT_INTS);
        } catch (RuntimeException | LinkageError e) { // a backend's target(): said by every rank, not a hang
          failure = "its target: " + (e.getMessage() == null ? e.toString() : e.getMessage());
        }
      }
      mine[0] = failure == null ? 0 : 1;
      int[] maxima = comm.allReduceMax(mine);
      if (maxima[0] != 0) {
        SortedMap<Integer, String> failures = Verdict.reasons(comm, failure);
        throw new BackendUnavailableException("the backend cannot run on ranks " + failures.keySet()
            + Verdict.describe(failures), null);
      }
      return maxima;
    } catch (RuntimeException e) {
      try {
        if (b != null) {
          b.close();
        }
      } finally {
        node.close();
      }
      throw e;
    }
  }

  /** A caller's communicator: used, never closed by the library. */
  private static final class Borrowed extends ForwardingCommunicator {
    Borrowed(Communicator inner) {
      super(inner);
    }

    @Override
    public void close() {}
  }

  /** Releases what {@link #open} opened, in reverse order; a borrowed communicator is never closed. */
  @Override
  public void close() {
    try {
      targets.close();
      backend.close();
    } finally {
      try {
        caches.close();
      } finally {
        comm.close();
      }
    }
  }
}
