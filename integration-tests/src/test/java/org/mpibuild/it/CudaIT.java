package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The CUDA backend under a real mpirun with 4 ranks. Without a GPU (CI): binaries for architectures
 * named explicitly through the collective path, nvcc's log on every rank, a missing driver reported
 * cleanly everywhere; the load-and-run test skips, printing why. With a GPU it builds for the job's GPUs,
 * runs saxpy on every rank and checks the numbers.
 */
class CudaIT {
  private static final Pattern LINE = Pattern.compile(
      "^CUDA step=(\\S+) rank=(\\d+) outcome=(\\S+) target=(\\S*) magic=(\\S*) verified=(\\S+) message=(.*)$");
  static Mpirun.Job job;

  record Line(int rank, String outcome, String target, String magic, boolean verified, String message) {}

  @BeforeAll
  static void runJob() {
    boolean nvcc = java.nio.file.Files.isExecutable(java.nio.file.Path.of("/usr/local/cuda/bin/nvcc"))
        || System.getenv("PATH").contains("cuda") || new java.io.File("/usr/local/bin/nvcc").canExecute();
    if (!nvcc) {
      System.out.println("CudaIT skipped: nvcc is not installed");
    }
    Assumptions.assumeTrue(nvcc, "nvcc is not installed");
    job = Mpirun.run(4, 300, Map.of(), "org.mpibuild.programs.CudaBuilds", "sm_80,sm_90");
  }

  @AfterAll
  static void cleanUp() {
    if (job != null) {
      Mpirun.delete(job.dir());
    }
  }

  static List<Line> step(String name) {
    List<Line> out = new ArrayList<>();
    for (int r = 0; r < 4; r++) {
      Line found = null;
      for (String l : job.stdoutByRank().get(r)) {
        Matcher m = LINE.matcher(l);
        if (m.matches() && m.group(1).equals(name)) {
          found = new Line(Integer.parseInt(m.group(2)), m.group(3), m.group(4), m.group(5),
              Boolean.parseBoolean(m.group(6)), m.group(7));
        }
      }
      if (found == null) {
        throw new AssertionError("rank " + r + " reported no step " + name + "\n" + job.describe());
      }
      out.add(found);
    }
    return out;
  }

  @Test
  void jobEndsCleanly() {
    assertEquals(0, job.exitCode(), job.describe());
    assertTrue(job.orphans().isEmpty(), job.orphans().toString());
  }

  @Test
  void oneNamedArchitectureGivesEveryRankTheSameCubin() {
    for (Line l : step("cubin")) {
      assertEquals("ok", l.outcome(), l.message());
      assertEquals("sm_80", l.target());
      assertEquals("7f454c46", l.magic(), "ELF");
      assertTrue(l.message().contains("nvcc") && l.message().contains("-arch=sm_80"), l.message());
    }
  }

  @Test
  void severalNamedArchitecturesGiveEveryRankTheSameFatbin() {
    for (Line l : step("fatbin")) {
      assertEquals("ok", l.outcome(), l.message());
      assertEquals("sm_80,sm_90", l.target());
      assertEquals("50ed55ba", l.magic(), "fatbin magic");
      assertTrue(l.message().contains("arch=compute_90,code=compute_90"), l.message());
    }
  }

  @Test
  void compileErrorGivesEveryRankNvccsLog() {
    List<Line> lines = step("compile-error");
    for (Line l : lines) {
      assertEquals("CompileException", l.outcome(), l.message());
      assertEquals(lines.get(0).message(), l.message());
    }
    assertTrue(lines.get(0).message().contains("\"undeclared_value\" is undefined"), lines.get(0).message());
  }

  @Test
  void withoutAGpuEveryRankReportsTheBackendUnavailable() {
    List<Line> lines = step("driver");
    boolean gpu = lines.get(0).outcome().equals("ok");
    if (gpu) {
      System.out.println("withoutAGpuEveryRankReportsTheBackendUnavailable skipped: this machine has a GPU");
    }
    Assumptions.assumeFalse(gpu, "this machine has a GPU");
    for (Line l : lines) {
      assertEquals("BackendUnavailableException", l.outcome(), l.message());
      assertTrue(l.message().contains("CUDA backend unavailable: "), l.message());
      assertTrue(!l.message().contains("at jcuda."), "no raw stack trace: " + l.message());
      assertEquals(lines.get(0).message(), l.message());
    }
  }

  @Test
  void loadAndRunOnEveryRank() {
    List<Line> driver = step("driver");
    if (!driver.get(0).outcome().equals("ok")) {
      System.out.println("loadAndRunOnEveryRank skipped: no usable GPU: " + driver.get(0).message());
    }
    Assumptions.assumeTrue(driver.get(0).outcome().equals("ok"), "no usable GPU: " + driver.get(0).message());
    for (Line l : step("run")) {
      assertEquals("ok", l.outcome(), l.message());
      assertTrue(l.verified(), "rank " + l.rank() + " computed a wrong result");
    }
  }
}
