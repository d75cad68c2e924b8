package org.mpibuild.internal.protocol;

import java.util.ArrayList;
import java.util.List;
import org.mpibuild.CorruptBinaryException;
import org.mpibuild.internal.startup.JobTargets;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.internal.wire.EnvelopeBroadcast;
import org.mpibuild.internal.wire.SharePlan;
import org.mpibuild.spi.Communicator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The collective protocol's side of a compile shared between ranks ({@link SharedCompile}): how many ranks may
 * share one, and the steps every rank takes once the root has announced its plan.
 */
final class ShareSteps {
  private static final Logger log = LoggerFactory.getLogger(ShareSteps.class);
  private final int setting;
  private final Communicator comm;
  private final BinarySource source;
  private final EnvelopeBroadcast broadcaster;
  private final JobTargets targets;
  /** How many ranks may share a compile; 1: none. */
  private int ranks;

  /** @param setting {@code MPI_BUILD_COMPILE_SHARE}: a number of ranks, or 0 for auto ({@link #onNode}) */
  ShareSteps(int setting, Communicator comm, BinarySource source, EnvelopeBroadcast broadcaster, JobTargets targets) {
    this.setting = setting;
    this.comm = comm;
    this.source = source;
    this.broadcaster = broadcaster;
    this.targets = targets;
    this.ranks = ranks(setting, 1, 1);
  }

  /**
   * For a rank whose node runs {@code nodeRanks} ranks of the communicator on {@code nodeCores} processors: where
   * ranks outnumber cores, a part compiled on another rank competes with the root's (measured at 16 ranks on 2
   * cores: no clear gain in time, one more compiler start-up of CPU), so the auto setting shares nothing there.
   */
  void onNode(int nodeRanks, int nodeCores) {
    ranks = ranks(setting, nodeRanks, nodeCores);
  }

  /** No sharing: asynchronous builds, whose ranks are meant to go on with the program's work meanwhile. */
  void off() {
    ranks = 1;
  }

  /** How many of a group of {@code size} ranks may share a compile. */
  int ranks(int size) {
    return Math.min(ranks, size);
  }

  /** The setting's value where it is set (above 0); else 2 with a core per rank, else 1. */
  static int ranks(int setting, int nodeRanks, int nodeCores) {
    return setting > 0 ? setting : nodeRanks <= nodeCores ? 2 : 1;
  }

  /**
   * After the root's plan went out: each rank with a part compiles it, and the parts go out from their owners in
   * order (part k from the k-th rank after the root); the root joins them. Returns the root's result (null on the
   * other ranks), which then goes out as any other. A plan that arrived corrupt ({@code problem}) leaves this rank
   * unable to keep in step with the others: it ends the job.
   */
  BinarySource.Obtained exchange(Communicator dist, Slot slot, Envelope plan, String problem) {
    List<String> parts;
    try {
      if (plan == null) {
        throw new CorruptBinaryException(problem);
      }
      parts = SharePlan.parts(plan);
      if (parts.size() > dist.size()) {
        throw new CorruptBinaryException("the plan has " + parts.size() + " parts for " + dist.size() + " ranks");
      }
    } catch (CorruptBinaryException e) {
      dist.abort("mpi-build: rank " + comm.rank() + " received a corrupt plan of a shared compile from root "
          + slot.jobRoot + ": " + e.getMessage(), 3);
      throw e;
    }
    String target = plan.metadata().target();
    plan.payload().release(); // read: a receiver's lent buffer goes back to the pool
    int mine = Math.floorMod(dist.rank() - slot.owner, dist.size());
    Envelope part = null;
    if (mine > 0 && mine < parts.size()) {
      long p0 = System.nanoTime();
      part = source.compilePart(slot.request, target, parts.get(mine));
      slot.partBytes = part.payload().length();
      log.debug("compiled part {} of {} of the shared compile of {} in {} ms", mine + 1, parts.size(),
          slot.request.kernelNames(), (System.nanoTime() - p0) / 1_000_000);
    }
    long s0 = System.nanoTime();
    List<Envelope> others = new ArrayList<>();
    List<Integer> owners = new ArrayList<>();
    for (int k = 1; k < parts.size(); k++) {
      int owner = (slot.owner + k) % dist.size();
      EnvelopeBroadcast.Received r = broadcaster.broadcast(dist, k == mine ? part : null, owner, false);
      if (slot.mine) {
        log.debug("part {} of {} arrived from rank {} after {} ms", k + 1, parts.size(), targets.jobRank(owner),
            (System.nanoTime() - s0) / 1_000_000);
        others.add(r.envelope() != null && r.problem() == null ? r.envelope() : null);
        owners.add(targets.jobRank(owner));
      }
    }
    return slot.mine ? slot.obtained.sharing().finish(others, owners) : null;
  }
}
