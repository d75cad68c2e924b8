package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Ready means ready, under a real mpirun with PoCL: each rank has a private, empty PoCL cache
 * ({@code bin/mpi-build-rank}), and {@link org.mpibuild.programs.FinishedCode} reports the work-group
 * functions that cache gained while the rank launched each kernel once at its shape. With the shapes named,
 * no rank may gain any: the root built them into the binary. Without, every rank gains one per kernel, which
 * shows that the check sees generated code when there is some.
 */
class FinishedCodeIT {
  private static final Pattern LINE = Pattern.compile(
      "^FINISHED rank=(\\d+) mode=(\\S+) loadMs=\\S+ launchMs=(\\S+) verified=(\\S+) generated=\\[(.*)]$");

  /** Each rank's generated work-group functions, and its standard error (its log). */
  record Ranks(List<String> generated, List<String> stderr) {}

  /** Each rank's generated work-group functions, checking that every rank ran and verified its results. */
  static List<String> generated(int ranks, String mode) {
    return run(ranks, mode, Map.of()).generated();
  }

  static Ranks run(int ranks, String mode, Map<String, String> env) {
    Mpirun.Job job = Mpirun.run(ranks, 300, env, "org.mpibuild.programs.FinishedCode", mode);
    try {
      assertEquals(0, job.exitCode(), job.describe());
      String[] out = new String[ranks];
      for (int r = 0; r < ranks; r++) {
        for (String line : job.stdoutByRank().get(r)) {
          Matcher m = LINE.matcher(line);
          if (m.matches()) {
            assertEquals(r, Integer.parseInt(m.group(1)));
            assertEquals("true", m.group(4), "rank " + r + " computed wrong results\n" + job.describe());
            out[r] = m.group(5);
            System.out.println("FinishedCodeIT " + mode + ": rank " + r + " first launches " + m.group(3)
                + " ms, generated [" + m.group(5) + "]");
          }
        }
        assertTrue(out[r] != null, "rank " + r + " did not report\n" + job.describe());
      }
      List<String> stderr = new java.util.ArrayList<>();
      for (int r = 0; r < ranks; r++) {
        stderr.add(job.stderr(r));
      }
      return new Ranks(List.of(out), stderr);
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  /**
   * The root shares the compile with the next rank ({@code MPI_BUILD_COMPILE_SHARE=2}, set because the default
   * shares only where the node has a core per rank): each builds one kernel's function, the root joins them, and
   * still no rank generates anything.
   */
  @Test
  void namedShapesGenerateNoCodeOnAnyRankAtTheirFirstLaunch() {
    Ranks ranks = run(3, "shapes", Map.of("MPI_BUILD_LOG_LEVEL", "DEBUG", "MPI_BUILD_COMPILE_SHARE", "2"));
    for (int r = 0; r < 3; r++) {
      assertEquals("", ranks.generated().get(r), "rank " + r + " generated work-group functions at its first launch");
    }
    assertTrue(ranks.stderr().get(1).contains("compiled part 2 of 2 of the shared compile"), ranks.stderr().get(1));
    assertTrue(ranks.stderr().get(0).contains("part 2 of 2 arrived from rank 1"), ranks.stderr().get(0));
    assertFalse(ranks.stderr().get(2).contains("compiled part"), ranks.stderr().get(2));
    for (int r = 0; r < 3; r++) {
      assertFalse(ranks.stderr().get(r).contains("started ahead"), "3 ranks on 2 cores: none started ahead\n"
          + ranks.stderr().get(r));
    }
  }

  /**
   * With the defaults on 2 ranks with a core each, both share the compile, and a new job's first compile has no
   * compile process started ahead (one would share the ranks' start with it): none compiles, none is started before
   * the job ends, and still no rank generates anything. A process started ahead serving a compile is
   * {@code SpareCompileProcessTest}'s.
   */
  @Test
  void aNewJobsFirstCompileHasNoCompileProcessStartedAhead() {
    Ranks ranks = run(2, "shapes", Map.of("MPI_BUILD_LOG_LEVEL", "DEBUG"));
    for (int r = 0; r < 2; r++) {
      String log = ranks.stderr().get(r);
      assertEquals("", ranks.generated().get(r), "rank " + r + " generated work-group functions at its first launch");
      assertTrue(log.contains("shared compile"), "rank " + r + " shares the compile\n" + log);
      assertFalse(log.contains("started ahead") || log.contains("PoCL compile process ahead"), "rank " + r + "\n" + log);
    }
  }

  /** Sharing and compile processes started ahead off: the root compiles alone, in a process started for it. */
  @Test
  void withSharingOffTheRootCompilesAloneAndNoRankGeneratesCode() {
    Ranks ranks = run(2, "shapes", Map.of("MPI_BUILD_LOG_LEVEL", "DEBUG", "MPI_BUILD_COMPILE_SHARE", "1",
        "MPI_BUILD_COMPILE_AHEAD", "0"));
    for (int r = 0; r < 2; r++) {
      assertEquals("", ranks.generated().get(r), "rank " + r + " generated work-group functions at its first launch");
      assertFalse(ranks.stderr().get(r).contains("shared compile"), ranks.stderr().get(r));
      assertFalse(ranks.stderr().get(r).contains("started ahead"), ranks.stderr().get(r));
    }
  }

  /**
   * The binary carries the named functions only: no generic ones (PoCL forces them at the binary query; the
   * compile gives it stand-ins and removes them), so a kernel whose shape nobody named is generated at its
   * first launch on every rank, from the program's bitcode, and computes right.
   */
  @Test
  void aShapeNobodyNamedIsGeneratedFromTheBitcodeOnEveryRank() {
    List<String> generated = generated(3, "some");
    for (int r = 0; r < generated.size(); r++) {
      assertEquals("mm16/16-16-1-goffs0-smallgrid", generated.get(r), "rank " + r);
    }
  }

  @Test
  void unnamedShapesAreGeneratedAtTheFirstLaunchOnEveryRank() {
    List<String> generated = generated(2, "none");
    for (int r = 0; r < generated.size(); r++) {
      assertTrue(generated.get(r).contains("mm8/8-8-1-goffs0-smallgrid"), "rank " + r + ": " + generated.get(r));
      assertTrue(generated.get(r).contains("mm16/16-16-1-goffs0-smallgrid"), "rank " + r + ": " + generated.get(r));
      assertFalse(generated.get(r).contains("0-0-0"), "the generic code travels in every binary");
    }
  }
}
