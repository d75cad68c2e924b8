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
  @Test
  void everyMisuseThrowsClearlyAndTheJobExitsZero() throws Exception {
    java.nio.file.Path crashDir = Files.createTempDirectory("mpi-build-misuse");
    Mpirun.Job job = Mpirun.run(3, 180, Map.of("MPI_BUILD_CACHE", "off",
        "JAVA_TOOL_OPTIONS", "-XX:ErrorFile=" + crashDir.resolve("hs_err_pid%p.log")), "org.mpibuild.programs.Misuse");
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
        List<String> crashes = files.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("hs_err")).toList();
        assertEquals(List.of(), crashes, "a JVM crashed\n" + job.describe());
      }
      Map<String, String> expected = new TreeMap<>();
      expected.put("rank 0 second-thread", "refused");
      for (int r = 0; r < 3; r++) {
        expected.put("rank " + r + " first-call", "ok");
        expected.put("rank " + r + " launch-after-close", "refused");
        expected.put("rank " + r + " messenger-after-close", "refused");
        expected.put("rank " + r + " binary-after-close", "refused");
      }
      assertEquals(expected, outcome, job.describe());
      assertEquals(0, job.exitCode(), job.describe());
      assertTrue(job.orphans().isEmpty(), "left running: " + job.orphans());
    } finally {
      Mpirun.delete(job.dir());
      Mpirun.delete(crashDir);
    }
  }

  private static String field(String line, String name) {
    int i = line.indexOf(" " + name + "=") + name.length() + 2;
    int end = name.equals("message") ? line.length() : line.indexOf(' ', i);
    return line.substring(i, end < 0 ? line.length() : end);
  }
}
