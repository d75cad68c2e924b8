package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Stream-ordered collectives under mpirun with OpenCL on PoCL ({@code StreamCollectives}), on the mpi.jar
 * binding, at 2, 3 and 4 ranks: each rank's queue slow by a random delay before each collective, a copy to
 * the host (a marker) and a kernel enqueued after each one that must see its result, two messengers on two
 * queues of one rank, one rank's failure seen by every rank with the same message, an absent rank named.
 *
 * <p>The all-reduce cases need {@code Communicator.iAllReduce} in the mpi.jar binding; until it has it,
 * every rank reports the binding's "has no typed reductions" and those cases are skipped with that reason.
 */
class StreamCollectivesIT {
  static List<String> checks(int ranks, String parts, boolean allowUnsupported) {
    Mpirun.Job job = Mpirun.run(ranks, 400, Map.of("MPI_BUILD_CACHE", "off"),
        "org.mpibuild.programs.StreamCollectives", parts, "6", "20000", Integer.toString(ranks));
    try {
      List<String> lines = new ArrayList<>();
      job.stdoutByRank().values().forEach(l -> l.stream()
          .filter(x -> x.startsWith("CHECK ") || x.startsWith("UNSUPPORTED ")).forEach(lines::add));
      List<String> unsupported = lines.stream().filter(l -> l.startsWith("UNSUPPORTED ")).toList();
      if (!unsupported.isEmpty() && allowUnsupported) {
        assertEquals(0, job.exitCode(), job.describe());
        Assumptions.abort("the mpi.jar binding has no Communicator.iAllReduce yet: " + unsupported.get(0));
      }
      assertTrue(unsupported.isEmpty(), job.describe());
      assertEquals(0, job.exitCode(), job.describe());
      assertTrue(job.orphans().isEmpty(), "left running: " + job.orphans());
      for (String part : parts.split(",")) {
        for (int r = 0; r < ranks; r++) {
          String prefix = "CHECK part=" + part + " rank=" + r + " ok=";
          String line = lines.stream().filter(l -> l.startsWith(prefix)).findFirst()
              .orElseThrow(() -> new AssertionError("no check of " + part + " from a rank\n" + job.describe()));
          assertTrue(line.startsWith(prefix + "true"), line + "\n" + job.describe());
        }
      }
      return lines;
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  /**
   * Broadcasts from a rotating root: the marker and the data seen after each broadcast are the root's, on
   * every rank, whatever the delays; a root whose read fails makes every rank fail with one message.
   */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void broadcastsAreOrderedWithTheQueueAndFailTogether(int ranks) {
    checks(ranks, "bcast,fail-bcast", false);
  }

  /**
   * All-reduces of every type and op; a marker after each must not complete before the result is on the
   * device (MPICH #7612), and a kernel after it reads the reduced values; two messengers on two queues keep
   * their collectives' order; one rank's failed read fails every rank with the same message.
   */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void allReducesAreOrderedWithTheQueueAcrossTwoQueuesAndFailTogether(int ranks) {
    checks(ranks, "allreduce,two-queues,fail-allreduce", true);
  }

  /** A rank that never starts a broadcast: rank 0 names it at the deadline (2 s) and aborts the job. */
  @Test
  void anAbsentRankIsNamedAtTheDeadline() {
    Mpirun.Job job = Mpirun.run(3, 200, Map.of("MPI_BUILD_CACHE", "off"), "org.mpibuild.programs.StreamCollectives",
        "absent", "1");
    try {
      assertNotEquals(0, job.exitCode(), job.describe());
      String all = job.describe();
      assertTrue(all.contains("ranks [2] of 3 did not start it within 2000 ms"), all);
      assertTrue(job.millis() < 120_000, "aborted at the deadline, not at the job's timeout: " + job.millis() + " ms");
    } finally {
      Mpirun.delete(job.dir());
    }
  }
}
