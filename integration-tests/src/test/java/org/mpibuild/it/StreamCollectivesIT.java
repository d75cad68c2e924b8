package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
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
 * queues of one rank, one rank's failure seen by every rank with the same message, an absent rank named, a rank
 * that closes its messenger with a broadcast not yet started named by every rank.
 *
 * <p>The all-reduce cases need {@code Communicator.iAllReduce} in the mpi.jar binding; until it has it,
 * every rank reports the binding's "has no typed reductions" and those cases are skipped with that reason.
 */
class StreamCollectivesIT {
  static List<String> checks(int ranks, String parts, boolean allowUnsupported) {
    return checks(ranks, parts, allowUnsupported, Map.of("MPI_BUILD_CACHE", "off"), 6);
  }

  static List<String> checks(int ranks, String parts, boolean allowUnsupported, Map<String, String> env, int rounds) {
    Mpirun.Job job = Mpirun.run(ranks, 400, env,
        "org.mpibuild.programs.StreamCollectives", parts, Integer.toString(rounds), "20000", Integer.toString(ranks));
    try {
      List<String> lines = new ArrayList<>();
      job.stdoutByRank().values().forEach(l -> l.stream()
          .filter(x -> x.startsWith("CHECK ") || x.startsWith("UNSUPPORTED ") || x.startsWith("PATH "))
          .forEach(lines::add));
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
   * every rank, whatever the delays; a root whose read fails makes every rank fail with one message, and so does
   * a root that closes its messenger before its broadcast started.
   */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void broadcastsAreOrderedWithTheQueueAndFailTogether(int ranks) {
    List<String> lines = checks(ranks, "bcast,fail-bcast,close", false);
    // mpi.jar has no persistent collectives: the repeated broadcasts (each root several times) are non-blocking
    assertEquals(0, persistentUses(lines, "bcast", ranks, "none: non-blocking"));
    // mpi.jar's JDK 17 has no FFM API: the collectives run on the progress thread
    assertRun(lines, "bcast", "on the progress thread: Java 17");
  }

  /**
   * All-reduces of every type and op; a marker after each must not complete before the result is on the
   * device (MPICH #7612), and a kernel after it reads the reduced values; two messengers on two queues keep
   * their collectives' order; one rank's failed read fails every rank with the same message. The same
   * all-reduce repeated stays non-blocking on mpi.jar (no persistent collectives).
   */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void allReducesAreOrderedWithTheQueueAcrossTwoQueuesAndFailTogether(int ranks) {
    List<String> lines = checks(ranks, "allreduce,allreduce-repeat,two-queues,fail-allreduce,mismatch", true);
    assertEquals(0, persistentUses(lines, "allreduce-repeat", ranks, "none: non-blocking"));
  }

  /** Checks that every rank's PATH line of {@code part} says its collectives ran where {@code where} says. */
  static void assertRun(List<String> lines, String part, String where) {
    List<String> path = lines.stream().filter(l -> l.startsWith("PATH part=" + part + " ")).toList();
    assertFalse(path.isEmpty(), "no PATH line of " + part + ": " + lines);
    for (String l : path) {
      assertTrue(l.contains(" run=" + where), l);
    }
  }

  /** The persistent collectives each rank used in {@code part}, from its PATH lines, checked equal on every rank. */
  static long persistentUses(List<String> lines, String part, int ranks, String binding) {
    List<String> path = lines.stream().filter(l -> l.startsWith("PATH part=" + part + " ")).toList();
    assertEquals(ranks, path.size(), "one PATH line per rank: " + lines);
    long uses = -1;
    for (String l : path) {
      long n = Long.parseLong(l.replaceAll(".* persistent=(\\d+) .*", "$1"));
      assertTrue(uses < 0 || uses == n, "ranks used persistent collectives differently (MPI would deadlock): " + path);
      uses = n;
      assertTrue(l.contains(" binding=" + binding), l);
    }
    return uses;
  }

  /**
   * On the FFM binding (Open MPI 4.1's MPIX_Bcast_init and MPIX_Allreduce_init), the same repeated broadcast
   * (one root per rank, rotating) and all-reduce start persistent collectives from their second use, every
   * rank the same number, with the same checks of the results as on mpi.jar; the all-reduces of every type
   * and op (no signature repeats in 6 rounds) stay non-blocking. Its JDK 25 runs the collectives on the queue
   * itself (native kernels): every part of the mpi.jar tests passes there too, a failure on one rank still
   * reaches every rank, and two messengers of one rank (one on its queue, the other on its progress thread:
   * PoCL runs this machine's queues on 2 threads) keep their collectives' order.
   */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void onTheFfmBindingRepeatedCollectivesArePersistent(int ranks) {
    Assumptions.assumeTrue(Files.isExecutable(FfmIT.JDK.resolve("bin/java")), "no JDK 22+ for the FFM binding at "
        + FfmIT.JDK);
    Map<String, String> env = new HashMap<>(FfmIT.env());
    env.put("MPI_BUILD_CACHE", "off");
    int rounds = 6;
    List<String> lines = checks(ranks, "bcast,allreduce-repeat,allreduce,two-queues,fail-allreduce,fail-bcast,mismatch,"
        + "close", false, env, rounds);
    assertRun(lines, "bcast", "on the device's queue (native kernels through the FFM API)");
    assertRun(lines, "allreduce", "on the device's queue (native kernels through the FFM API)");
    assertEquals(rounds - ranks, persistentUses(lines, "bcast", ranks, "MPIX_Bcast_init"));
    assertEquals(rounds - 1, persistentUses(lines, "allreduce-repeat", ranks, "MPIX_Bcast_init"));
    assertEquals(0, persistentUses(lines, "allreduce", ranks, "MPIX_Bcast_init"));
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
