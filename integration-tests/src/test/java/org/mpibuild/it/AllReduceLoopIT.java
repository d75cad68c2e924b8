package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The all-reduce benchmark's program ({@code AllReduceLoop}, {@code make bench-allreduce}) at small sizes under
 * mpirun on 2 ranks, on both bindings: every mode's loop computes the right sums on every rank (the program
 * checks every element and fails the job on a wrong one), so a figure is never taken from a wrong loop. On the
 * FFM binding the manual pattern's {@code MPI_Allreduce} is the binding's {@code Communicator.allReduce}.
 */
class AllReduceLoopIT {
  private static void loops(Map<String, String> env) {
    // a mode twice in one job, as the benchmark runs them (ordered, manual, manual, ordered)
    Mpirun.Job job = Mpirun.run(2, 300, env, "org.mpibuild.programs.AllReduceLoop", "20:4096:2,3:1048576:1",
        "ordered,kernels,manual,ordered");
    try {
      assertEquals(0, job.exitCode(), job.describe());
      List<String> results = job.stdoutByRank().values().stream().flatMap(List::stream)
          .filter(l -> l.startsWith("RESULT ")).toList();
      assertEquals(8, results.size(), "one RESULT per loop, from rank 0: " + results);
      assertTrue(results.stream().allMatch(l -> l.matches(".* warmup_loops=[1-9][0-9]* warmup_quiet=(true|false)")),
          "every loop says how it was warmed up: " + results);
      for (String mode : List.of("ordered", "kernels", "manual")) {
        for (String bytes : List.of("4096", "1048576")) {
          assertTrue(results.stream().anyMatch(l -> l.startsWith("RESULT mode=" + mode + " bytes=" + bytes + " ")
              && l.contains(" correct=true ")), mode + " at " + bytes + " bytes: " + results);
        }
      }
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  @Test
  void everyLoopSumsRightOnMpiJar() {
    loops(Map.of("MPI_BUILD_CACHE", "off"));
  }

  @Test
  void everyLoopSumsRightOnTheFfmBinding() {
    Assumptions.assumeTrue(Files.isExecutable(FfmIT.JDK.resolve("bin/java")), "no JDK 22+ for the FFM binding at "
        + FfmIT.JDK);
    Map<String, String> env = new HashMap<>(FfmIT.env());
    env.put("MPI_BUILD_CACHE", "off");
    loops(env);
  }
}
