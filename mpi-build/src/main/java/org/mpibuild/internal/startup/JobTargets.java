package org.mpibuild.internal.startup;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.UnaryOperator;
import org.mpibuild.internal.agreement.RequestFingerprint;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Communicator;

/**
 * The targets of every rank, agreed on once when an instance is created, and the groups of ranks that
 * share one. When the backend builds one binary per target (OpenCL) and the job has several, the ranks
 * are split into one communicator per target: each group's binary is compiled on a rank of that group,
 * all groups in parallel, and broadcast inside the group only. A backend that builds one binary for the
 * whole job (a CUDA fatbin for every architecture) keeps a single group.
 */
public final class JobTargets implements AutoCloseable {
  private final List<String> rankTargets;
  private final List<String> distinct;
  private final List<List<Integer>> members;
  private final int group;
  private final Communicator groupComm;
  private final boolean jobWideBinary;

  private JobTargets(List<String> rankTargets, List<String> distinct, List<List<Integer>> members, int group,
      Communicator groupComm, boolean jobWideBinary) {
    this.rankTargets = rankTargets;
    this.distinct = distinct;
    this.members = members;
    this.group = group;
    this.groupComm = groupComm;
    this.jobWideBinary = jobWideBinary;
  }

  /**
   * Every rank's target, and a split by target if needed: one all-reduce where every rank has the same target (the
   * usual job), and an all-gather of the targets only where they differ. Collective.
   */
  public static JobTargets gather(Communicator comm, Backend backend) {
    return agreed(comm, backend, comm.allReduceMax(agreementVector(backend)), 0);
  }

  /** What this rank adds to the all-reduce that {@link #agreed} reads: whether every rank has its target. */
  public static int[] agreementVector(Backend backend) {
    return RequestFingerprint.agreementVector(backend.target());
  }

  /**
   * Every rank's target, and a split by target if needed, from {@code maxima}: the element-wise maxima over the ranks,
   * from index {@code from}, of each rank's {@link #agreementVector} (the caller's all-reduce may carry more). Where
   * they show that every rank has this rank's target, nothing is sent; else the targets are gathered. Collective.
   */
  public static JobTargets agreed(Communicator comm, Backend backend, int[] maxima, int from) {
    String mine = backend.target();
    if (RequestFingerprint.agreed(maxima, from)) {
      return of(Collections.nCopies(comm.size(), mine), comm, backend);
    }
    byte[][] all = comm.allGather(mine.getBytes(StandardCharsets.UTF_8));
    List<String> targets = new ArrayList<>();
    for (byte[] b : all) {
      targets.add(new String(b, StandardCharsets.UTF_8));
    }
    return of(targets, comm, backend);
  }

  private static JobTargets of(List<String> targets, Communicator comm, Backend backend) {
    List<String> distinct = new ArrayList<>();
    List<List<Integer>> members = new ArrayList<>();
    for (int r = 0; r < targets.size(); r++) {
      int g = distinct.indexOf(targets.get(r));
      if (g < 0) {
        g = distinct.size();
        distinct.add(targets.get(r));
        members.add(new ArrayList<>());
      }
      members.get(g).add(r);
    }
    boolean jobWide = backend.buildsForJobTargets();
    int mine = distinct.indexOf(targets.get(comm.rank()));
    Communicator groupComm = !jobWide && distinct.size() > 1 ? comm.split(mine) : null;
    return new JobTargets(List.copyOf(targets), List.copyOf(distinct), members, mine, groupComm, jobWide);
  }

  /** Whether ranks build and receive per target group rather than as one job. */
  public boolean grouped() {
    return groupComm != null;
  }

  /** The communicator the binary travels on: this rank's group, or the whole job's. */
  public Communicator distribution(Communicator job) {
    return grouped() ? groupComm : job;
  }

  /**
   * The rank, in this rank's distribution communicator, that compiles for this rank's group: the job's
   * root in its own group, the lowest rank of the group elsewhere. Different groups, different ranks.
   */
  public int distributionRoot(int root) {
    if (!grouped()) {
      return root;
    }
    int at = members.get(group).indexOf(root);
    return Math.max(at, 0);
  }

  /** The rank in the job of the rank {@code distributionRank} of this rank's distribution communicator. */
  public int jobRank(int distributionRank) {
    return grouped() ? members.get(group).get(distributionRank) : distributionRank;
  }

  /** The same targets, this rank's group communicator (if any) carried by {@code wrap}'s wrapper. */
  public JobTargets over(UnaryOperator<Communicator> wrap) {
    return new JobTargets(rankTargets, distinct, members, group, groupComm == null ? null : wrap.apply(groupComm),
        jobWideBinary);
  }

  /** The targets the rank that compiles for this rank's group builds for, by rank. */
  public List<String> buildTargets() {
    if (jobWideBinary) {
      return rankTargets;
    }
    List<String> out = new ArrayList<>();
    for (int r : members.get(group)) {
      out.add(rankTargets.get(r));
    }
    return out;
  }

  /** Every rank's target, by rank. */
  public List<String> rankTargets() {
    return rankTargets;
  }

  /** The distinct targets, in order of the lowest rank that has each. */
  public List<String> distinct() {
    return distinct;
  }

  @Override
  public void close() {
    if (groupComm != null) {
      groupComm.close();
    }
  }
}
