package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Documented misuse under a real mpirun with PoCL ({@link org.mpibuild.programs.Misuse}): a second thread on
 * a busy MpiBuild, a kernel launched after its MpiBuild was closed, a messenger and a binary used after it.
 * Each call throws a clear IllegalStateException; before, the launch crashed the JVM (SIGSEGV in
 * clEnqueueNDRangeKernel, an hs_err file) and the second thread corrupted the first one's collective.
 */
class MisuseIT {
  /** Each rank's outcome per step, after checking that no JVM crashed. */
  static Map<String, String> run(String mode) throws Exception {
    java.nio.file.Path crashDir = Files.createTempDirectory("mpi-build-misuse");
    Mpirun.Job job = Mpirun.run(3, 90, Map.of("MPI_BUILD_CACHE", "off",
        "JAVA_TOOL_OPTIONS", "-XX:ErrorFile=" + crashDir.resolve("hs_err_pid%p.log")), "org.mpibuild.programs.Misuse",
        mode);
    try {
      Map<String, String> outcome = new TreeMap<>();
      for (int r = 0; r < 3; r++) {
        for (String line : job.stdoutByRank().get(r)) {
          if (line.startsWith("MISUSE ")) {
            String step = field(line, "step");
            outcome.put("rank " + r + " " + step, field(line, "outcome") + (step.equals("second-thread")
                && Long.parseLong(field(line, "ms")) > 1_000 ? " (slow: " + field(line, "ms") + " ms)" : ""));
          }
        }
      }
      try (Stream<java.nio.file.Path> files = Files.list(crashDir)) {
        List<String> crashes = files.map(p -> p.getFileName().toString()).toList();
        assertEquals(List.of(), crashes, "a JVM crashed\n" + job.describe());
      }
      assertEquals(0, job.exitCode(), outcome + "\n" + job.describe());
      assertTrue(job.orphans().isEmpty(), "left running: " + job.orphans());
      return outcome;
    } finally {
      Mpirun.delete(job.dir());
      Mpirun.delete(crashDir);
    }
  }

  @Test
  void aSecondThreadOnABusyMpiBuildIsRefusedAtOnceAndTheFirstCallSucceedsOnEveryRank() throws Exception {
    Map<String, String> outcome = run("second-thread");
    assertEquals(Map.of("rank 0 second-thread", "refused", "rank 0 first-call", "ok", "rank 1 first-call", "ok",
        "rank 2 first-call", "ok"), outcome);
  }

  @Test
  void kernelsMessengersAndBinariesUsedAfterCloseThrowAndNoJvmCrashes() throws Exception {
    Map<String, String> outcome = run("after-close");
    Map<String, String> expected = new TreeMap<>();
    for (int r = 0; r < 3; r++) {
      expected.put("rank " + r + " first-call", "ok");
      expected.put("rank " + r + " launch-after-close", "refused");
      expected.put("rank " + r + " messenger-after-close", "refused");
      expected.put("rank " + r + " binary-after-close", "refused");
    }
    assertEquals(expected, outcome);
  }

  private static String field(String line, String name) {
    int i = line.indexOf(" " + name + "=") + name.length() + 2;
    int end = name.equals("message") ? line.length() : line.indexOf(' ', i);
    return line.substring(i, end < 0 ? line.length() : end);
  }
}
