package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Deadlines, settings and the MPI binding under a real mpirun of 2 ranks: the collective deadline is
 * agreed, waits without spinning, and holds in caller mode; a misspelt setting is reported; a job without a
 * binding fails instead of building once per rank.
 */
class DeadlinesIT {
  private static final Pattern WAITED = Pattern.compile("^WAITED rank=1 wall_ms=(\\d+) cpu_ms=(\\d+)$");

  static Mpirun.Job faults(String name, long timeoutSeconds, Map<String, String> env) {
    return Mpirun.run(2, timeoutSeconds, env, "org.mpibuild.programs.Faults", name);
  }

  @Test
  void aDeadlineOffOnOneRankIsTheSameMismatchOnBothQuickly() {
    // Before, rank 1 ran other collectives than rank 0, which aborted the job at the 3 s deadline, blaming it.
    Mpirun.Job job = faults("deadline-off-one-rank", 150, Map.of("MPI_BUILD_COLLECTIVE_TIMEOUT", "3"));
    try {
      FaultTableIT.sameErrorEverywhere(job, "1", "RequestMismatchException",
          "rank 1 differs in MPI_BUILD_COLLECTIVE_TIMEOUT", "MPI_BUILD_COLLECTIVE_TIMEOUT=off",
          "MPI_BUILD_COLLECTIVE_TIMEOUT=3s");
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  /** With the deadline off, a rank waiting 4 s for another rank's computation costs a fraction of a core. */
  @Test
  void aRankWaitingWithTheDeadlineOffDoesNotSpin() {
    Mpirun.Job job = faults("off-waits-idle", 150, Map.of("MPI_BUILD_COLLECTIVE_TIMEOUT", "off"));
    try {
      assertEquals(0, job.exitCode(), job.describe());
      Matcher m = job.stdoutByRank().get(1).stream().map(WAITED::matcher).filter(Matcher::matches).findFirst()
          .orElseThrow(() -> new AssertionError("rank 1 reported no wait\n" + job.describe()));
      long wall = Long.parseLong(m.group(1));
      long cpu = Long.parseLong(m.group(2));
      assertTrue(wall >= 3_000, "rank 1 waited " + wall + " ms for rank 0's 4 s\n" + job.describe());
      assertTrue(cpu < wall / 4, "rank 1 used " + cpu + " ms of CPU in a wait of " + wall + " ms: it spins");
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  /** Caller mode: a rank that never starts the asynchronous build; rank 0 ends the job at the deadline. */
  @Test
  void aRankThatNeverStartsAnAsyncBuildIsNamedAtTheDeadline() {
    // Before, rank 0 waited until rank 1 came, 100 s later.
    Mpirun.Job job = faults("async-never-started", 150, Map.of("MPI_BUILD_COLLECTIVE_TIMEOUT", "2",
        "MPI_BUILD_PROGRESS", "caller"));
    try {
      assertNotEquals(0, job.exitCode(), "the job must be aborted\n" + job.describe());
      assertTrue(job.millis() < 60_000, "ended after " + job.millis() + " ms, not at the 2 s deadline\n"
          + job.describe());
      assertTrue(job.stderr(0).contains("ranks [1] of 2 did not enter the build of [saxpy] within 2 s"),
          job.describe());
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  /**
   * Caller mode (issue 44): a rank that started the asynchronous build and then computes for three times the
   * deadline without touching the library has entered the build; the job completes, on both bindings. Before,
   * rank 0 named it as "did not enter the build" and aborted the job.
   */
  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(strings = {"mpijava", "ffm"})
  void aRankThatStartedAnAsyncBuildAndComputesHasEnteredIt(String binding) {
    Map<String, String> env = new java.util.HashMap<>(Map.of("MPI_BUILD_COLLECTIVE_TIMEOUT", "2",
        "MPI_BUILD_PROGRESS", "caller"));
    if (binding.equals("ffm")) {
      org.junit.jupiter.api.Assumptions.assumeTrue(java.nio.file.Files.isExecutable(FfmIT.JDK.resolve("bin/java")),
          "no JDK 22+ for the FFM binding (scripts/provision found none)");
      env.putAll(FfmIT.env());
      env.put("MPI_BUILD_COLLECTIVE_TIMEOUT", "2");
    }
    Mpirun.Job job = faults("async-computes-past-deadline", 150, env);
    try {
      assertEquals(0, job.exitCode(), job.describe());
      for (int rank = 0; rank < 2; rank++) {
        int r = rank;
        String expected = "FAULT case=async-computes-past-deadline step=1 rank=" + r + " outcome=ok";
        assertTrue(job.stdoutByRank().get(r).stream().anyMatch(l -> l.startsWith(expected)
            && l.contains("verified=true")), "rank " + r + " did not build and verify\n" + job.describe());
        assertTrue(job.stdoutByRank().get(r).stream().anyMatch(l -> l.contains("step=waited rank=" + r)
            && l.endsWith("message=caller")), "rank " + r + " not in caller mode\n" + job.describe());
      }
      assertTrue(job.millis() >= 6_000, "rank 1 computed for 6 s: " + job.millis() + " ms\n" + job.describe());
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  /** The programs' class path without the MPI bindings and without an SLF4J provider. */
  static String classpathWithoutBindings() throws Exception {
    List<String> out = new ArrayList<>();
    for (String entry : Mpirun.classpath().split(File.pathSeparator)) {
      if (!entry.endsWith("*")) {
        out.add(entry);
        continue;
      }
      try (Stream<Path> jars = Files.list(Path.of(entry.substring(0, entry.length() - 1)))) {
        jars.map(Path::toString).filter(j -> j.endsWith(".jar") && !j.contains("mpi-build-ffm")
            && !j.contains("mpi-build-mpijava") && !j.contains("logback")).sorted().forEach(out::add);
      }
    }
    return String.join(File.pathSeparator, out);
  }

  /**
   * No binding on the class path under mpirun: create() fails on both ranks, the message on stderr with no
   * SLF4J provider; with MPI_BUILD_MODE=local each rank builds alone, as asked, and a misspelt setting is
   * reported once per rank.
   */
  @Test
  void withoutABindingTheJobFailsUnlessLocalBuildsAreAskedFor() throws Exception {
    String cp = classpathWithoutBindings();
    Mpirun.Job failed = Mpirun.runOn(cp, 2, 150, Map.of(), "org.mpibuild.programs.LocalBuild");
    try {
      for (int r = 0; r < 2; r++) {
        String line = failed.stdoutByRank().get(r).stream().filter(l -> l.startsWith("unavailable: ")).findFirst()
            .orElseThrow(() -> new AssertionError("create() did not fail\n" + failed.describe()));
        assertTrue(line.contains("started by an MPI launcher as one of 2 ranks") && line.contains(
            "org.mpibuild:mpi-build-mpijava") && line.contains("org.mpibuild:mpi-build-ffm")
            && line.contains("MPI_BUILD_MODE=local"), line);
        assertTrue(failed.stderr(r).contains("mpi-build: warning: " + line.substring("unavailable: ".length())),
            "on stderr without an SLF4J provider\n" + failed.describe());
      }
    } finally {
      Mpirun.delete(failed.dir());
    }
    Mpirun.Job local = Mpirun.runOn(cp, 2, 150, Map.of("MPI_BUILD_MODE", "local", "MPI_BUILD_COLECTIVE_TIMEOUT", "3"),
        "org.mpibuild.programs.LocalBuild");
    try {
      assertEquals(0, local.exitCode(), local.describe());
      String warning = "mpi-build: warning: environment variable MPI_BUILD_COLECTIVE_TIMEOUT is not a setting of "
          + "mpi-build, so it is ignored; did you mean MPI_BUILD_COLLECTIVE_TIMEOUT?";
      for (int r = 0; r < 2; r++) {
        assertTrue(local.stdoutByRank().get(r).stream().anyMatch(l -> l.startsWith("local: ranks=1 ")
            && l.contains("verified=true")), local.describe());
        String err = local.stderr(r);
        assertEquals(1, err.split(Pattern.quote(warning), -1).length - 1, "once on rank " + r + ": " + err);
      }
    } finally {
      Mpirun.delete(local.dir());
    }
  }
}
