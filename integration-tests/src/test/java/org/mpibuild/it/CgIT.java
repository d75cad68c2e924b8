package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The conjugate gradient example ({@code org.mpibuild.examples.cg.Cg}) under a real launcher with OpenCL on PoCL:
 * with {@code --verify}, rank 0 solves the whole grid on the host in double precision and the job fails unless
 * the residual history of each mode matches it within {@code Cg.TOLERANCE} (1e-6 relative; seen: 1.6e-13) and
 * ends at the same iteration. The grid has 33 rows, so 2, 3 and 4 ranks split it unevenly.
 *
 * <ul>
 *   <li>FFM binding (JDK 25), Open MPI, 1 to 4 ranks: both modes, stream-ordered on the device's queue;
 *   <li>FFM binding, MPICH's mpiexec: both modes at 2 ranks;
 *   <li>mpi.jar binding (Java 17), 1 to 4 ranks: both modes, stream-ordered on the messenger's progress thread;
 *   <li>a deliberate ordering fault ({@code --fault sum-late}: x and r updated with this rank's own p·Ap, before
 *       its sum over ranks) makes {@code --verify} fail the job.
 * </ul>
 */
class CgIT {
  static final String CG = "org.mpibuild.examples.cg.Cg";
  static final String[] VERIFY = {"--n", "33", "--mode", "ordered,manual", "--verify", "--check-every", "5"};

  static Map<String, String> ffm() {
    Map<String, String> env = new HashMap<>(FfmIT.env());
    env.put("MPI_BUILD_CACHE", "off");
    return env;
  }

  /** The lines of rank 0 that start with {@code CG}, after checking that the job passed. */
  static List<String> passed(Mpirun.Job job) {
    try {
      assertEquals(0, job.exitCode(), job.describe());
      assertTrue(job.orphans().isEmpty(), "left running: " + job.orphans());
      return job.stdoutByRank().get(0).stream().filter(l -> l.startsWith("CG")).toList();
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  /** Each mode has a CG line and a CG-VERIFY line that says ok, and every mode ran the same iterations. */
  static void assertVerified(List<String> lines, List<String> modes, int ranks) {
    String iterations = null;
    for (String mode : modes) {
      String verify = lines.stream().filter(l -> l.startsWith("CG-VERIFY mode=" + mode + " ")).findFirst()
          .orElseThrow(() -> new AssertionError("no CG-VERIFY line for " + mode + ": " + lines));
      assertTrue(verify.endsWith(" ok=true"), verify);
      String result = lines.stream().filter(l -> l.startsWith("CG mode=" + mode + " ")).findFirst()
          .orElseThrow(() -> new AssertionError("no CG line for " + mode + ": " + lines));
      assertTrue(result.contains(" ranks=" + ranks + " ") && result.contains(" converged=true "), result);
      String its = result.replaceAll(".* iterations=(\\d+) .*", "$1");
      assertTrue(iterations == null || iterations.equals(its), "the modes ran different iterations: " + lines);
      iterations = its;
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 3, 4})
  void onTheFfmBindingBothModesMatchTheHostReference(int ranks) {
    FfmIT.assumeJdk();
    List<String> lines = passed(Mpirun.run(ranks, 400, ffm(), CG, VERIFY));
    assertVerified(lines, List.of("ordered", "manual"), ranks);
    assertTrue(lines.stream().anyMatch(l -> l.startsWith("CG mode=ordered ")
        && l.contains(" run=on the device's queue")), lines.toString());
  }

  @Test
  void underMpichBothModesMatchTheHostReference() throws Exception {
    FfmIT.assumeJdk();
    if (!Files.isExecutable(FfmIT.MPIEXEC_MPICH)) {
      FfmIT.skip("MPICH is not installed (" + FfmIT.MPIEXEC_MPICH + "; scripts/provision installs it)");
    }
    List<String> lines = new ArrayList<>();
    for (String l : FfmIT.mpich(2, CG, VERIFY)) {
      if (l.startsWith("[0] CG")) {
        lines.add(l.substring("[0] ".length()));
      }
    }
    assertVerified(lines, List.of("ordered", "manual"), 2);
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 3, 4})
  void onMpiJarBothModesMatchTheHostReference(int ranks) {
    List<String> lines = passed(Mpirun.run(ranks, 400, Map.of("MPI_BUILD_CACHE", "off"), CG, VERIFY));
    assertVerified(lines, List.of("ordered", "manual"), ranks);
  }

  /** Updating x and r before p·Ap is summed over ranks gives another history: the check must say so. */
  @Test
  void aDotProductReadBeforeItsAllReduceIsCaught() {
    FfmIT.assumeJdk();
    Mpirun.Job job = Mpirun.run(2, 400, ffm(), CG, "--n", "24", "--mode", "ordered", "--verify", "--fault",
        "sum-late");
    try {
      assertNotEquals(0, job.exitCode(), job.describe());
      String verify = job.stdoutByRank().get(0).stream().filter(l -> l.startsWith("CG-VERIFY ")).findFirst()
          .orElseThrow(() -> new AssertionError("no CG-VERIFY line:\n" + job.describe()));
      assertTrue(verify.endsWith(" ok=false"), verify);
    } finally {
      Mpirun.delete(job.dir());
    }
  }
}
