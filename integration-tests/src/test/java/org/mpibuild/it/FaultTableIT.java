package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.mpibuild.CacheAdmin;

/**
 * The fault table, each case a real mpirun job of 4 ranks running {@link org.mpibuild.programs.Faults}:
 * the outcome on every rank, the time the job took to end, and no process left behind.
 */
class FaultTableIT {
  private static final Pattern FAULT = Pattern.compile(
      "^FAULT case=(\\S+) step=(\\S+) rank=(\\d+) outcome=(\\S+) compiled=(\\S+) verified=(\\S+) ms=(\\d+) message=(.*)$");
  private static final Map<String, Long> MEASURED = new TreeMap<>();

  record Line(String step, int rank, String outcome, boolean compiled, boolean verified, long ms, String message) {}

  /** Runs a case, checks it ended within {@code boundSeconds} and left nothing running. */
  static Mpirun.Job fault(String name, long boundSeconds, Map<String, String> env) {
    Mpirun.Job job = Mpirun.run(4, boundSeconds + 60, env, "org.mpibuild.programs.Faults", name);
    synchronized (MEASURED) {
      MEASURED.put(name, job.millis());
    }
    assertTrue(job.orphans().isEmpty(), "processes left behind by " + name + ": " + job.orphans());
    assertTrue(job.millis() < boundSeconds * 1000, name + " took " + job.millis() + " ms, over its bound of "
        + boundSeconds + " s\n" + job.describe());
    return job;
  }

  static Mpirun.Job fault(String name, long boundSeconds) {
    return fault(name, boundSeconds, Map.of());
  }

  /** Every rank's line for one step, in rank order. */
  static List<Line> lines(Mpirun.Job job, String step) {
    List<Line> out = new ArrayList<>();
    for (int r = 0; r < job.stdoutByRank().size(); r++) {
      Line found = null;
      for (String l : job.stdoutByRank().get(r)) {
        Matcher m = FAULT.matcher(l);
        if (m.matches() && m.group(2).equals(step)) {
          found = new Line(m.group(2), Integer.parseInt(m.group(3)), m.group(4), Boolean.parseBoolean(m.group(5)),
              Boolean.parseBoolean(m.group(6)), Long.parseLong(m.group(7)), m.group(8));
        }
      }
      if (found == null) {
        throw new AssertionError("rank " + r + " reported no step " + step + "\n" + job.describe());
      }
      out.add(found);
    }
    return out;
  }

  static void sameErrorEverywhere(Mpirun.Job job, String step, String exception, String... mustContain) {
    List<Line> lines = lines(job, step);
    for (Line l : lines) {
      assertEquals(exception, l.outcome(), "rank " + l.rank() + ": " + l.message() + "\n" + job.describe());
      assertEquals(lines.get(0).message(), l.message(), "rank " + l.rank() + " reports another message");
    }
    for (String s : mustContain) {
      assertTrue(lines.get(0).message().contains(s), "message lacks '" + s + "': " + lines.get(0).message());
    }
    assertEquals(0, job.exitCode(), job.describe());
  }

  static void everyRankVerified(Mpirun.Job job, String step, int compiles) {
    int c = 0;
    for (Line l : lines(job, step)) {
      assertEquals("ok", l.outcome(), "rank " + l.rank() + ": " + l.message() + "\n" + job.describe());
      assertTrue(l.verified(), "rank " + l.rank());
      c += l.compiled() ? 1 : 0;
    }
    assertEquals(compiles, c, "compiles in step " + step + "\n" + job.describe());
  }

  @AfterAll
  static void printMeasuredTimes() {
    System.out.println("fault table, 4 ranks, time from mpirun start to its exit:");
    MEASURED.forEach((k, v) -> System.out.printf("  %-26s %6d ms%n", k, v));
  }

  @Test
  void case01CompileError() {
    sameErrorEverywhere(fault("compile-error", 60), "1", "CompileException", "undeclared_value");
  }

  @Test
  void case02CompilerHangsAndTimesOut() {
    Mpirun.Job job = fault("compiler-hang", 40);
    sameErrorEverywhere(job, "1", "BuildTimeoutException", "did not finish within 2.0 s");
    for (Line l : lines(job, "1")) {
      assertTrue(l.ms() < 10_000, "rank " + l.rank() + " waited " + l.ms() + " ms for a 2 s timeout");
    }
  }

  @Test
  void case02CompilerCrashes() {
    sameErrorEverywhere(fault("compiler-crash", 60), "1", "KernelBuildException", "SIGSEGV");
  }

  /** Milliseconds from the SIGKILL the given rank announced to mpirun's exit. */
  static long killToExit(Mpirun.Job job, int rank) {
    for (String l : job.stdoutByRank().get(rank)) {
      Matcher m = Pattern.compile("^KILLING rank=\\d+ at=(\\d+)$").matcher(l);
      if (m.matches()) {
        return job.endEpochMillis() - Long.parseLong(m.group(1));
      }
    }
    throw new AssertionError("rank " + rank + " did not announce its SIGKILL\n" + job.describe());
  }

  /** A case in which {@code rank} kills itself with SIGKILL: mpirun must end the job soon after. */
  static void killedRankEndsTheJob(String name, int rank) {
    Mpirun.Job job = fault(name, 40);
    assertNotEquals(0, job.exitCode(), job.describe());
    assertTrue(job.mpirunOutput().contains("exited on signal 9"), job.describe());
    long ms = killToExit(job, rank);
    synchronized (MEASURED) {
      MEASURED.put(name + " (kill to exit)", ms);
    }
    assertTrue(ms < 10_000, "mpirun ended the job " + ms + " ms after rank " + rank + " died");
  }

  @Test
  void case03RootKilledMidCompileEndsTheJob() {
    killedRankEndsTheJob("root-killed", 0);
  }

  @Test
  void case04NonRootKilledWhileOthersWaitEndsTheJob() {
    killedRankEndsTheJob("rank-killed", 2);
  }

  @Test
  void case05DifferentSourcesOptionsOrKernelNames() {
    sameErrorEverywhere(fault("mismatch-source", 60), "1", "RequestMismatchException", "rank 3 differs in source");
    sameErrorEverywhere(fault("mismatch-options", 60), "1", "RequestMismatchException", "rank 3 differs in options");
    sameErrorEverywhere(fault("mismatch-kernels", 60), "1", "RequestMismatchException", "rank 3 differs in kernels");
  }

  @Test
  void case05bSettingsThatShapeTheProtocolDifferOnOneRank() {
    sameErrorEverywhere(fault("settings-batch-ranks", 30), "1", "RequestMismatchException",
        "rank 3 differs in MPI_BUILD_BATCH_RANKS", "MPI_BUILD_BATCH_RANKS=1");
    sameErrorEverywhere(fault("settings-node-cache", 30), "1", "RequestMismatchException",
        "rank 1 differs in MPI_BUILD_NODE_CACHE_DIR");
  }

  @Test
  void case06DifferentRoots() {
    sameErrorEverywhere(fault("different-roots", 60), "1", "RequestMismatchException", "rank 3 differs in root");
  }

  @Test
  void case07PayloadCorruptedInTransit() {
    sameErrorEverywhere(fault("payload-corrupted", 60), "1", "KernelLoadException",
        "could not be loaded on 1 of 4 ranks [2]", "rank 2: binary block 0 (bytes 0 to ");
  }

  @Test
  void case08CacheEntryCorruptedOrTruncated() {
    Mpirun.Job job = fault("cache-corrupted", 90);
    everyRankVerified(job, "cold", 1);
    everyRankVerified(job, "flipped", 1);
    everyRankVerified(job, "intact", 0);
    everyRankVerified(job, "truncated", 1);
    String log = job.stderr(0);
    assertTrue(log.contains("is corrupt") && log.contains("moving it aside"), log);
  }

  @Test
  void case09CacheDiskFull() throws Exception {
    Path mount = Files.createTempDirectory("mpi-build-full");
    Process m = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=24k", "tmpfs", mount.toString())
        .redirectErrorStream(true).start();
    boolean mounted = m.waitFor(20, TimeUnit.SECONDS) && m.exitValue() == 0;
    String why = new String(m.getInputStream().readAllBytes()).strip();
    Assumptions.assumeTrue(mounted, "skipped: a full disk is simulated with a 24 KiB tmpfs, and mounting one "
        + "needs root (mount said: " + why + ")");
    try {
      Path cache = mount.resolve("cache");
      Mpirun.Job job = fault("cache-disk-full", 60, Map.of("MPI_BUILD_CACHE_DIR", cache.toString()));
      everyRankVerified(job, "1", 1);
      assertTrue(job.stderr(0).contains("cannot write cache entry"), job.stderr(0));
      try (Stream<Path> s = Files.list(cache.resolve("entries"))) {
        assertEquals(List.of(), s.toList(), "the half-written file is cleaned up");
      }
    } finally {
      new ProcessBuilder("umount", mount.toString()).start().waitFor(20, TimeUnit.SECONDS);
      Files.deleteIfExists(mount);
    }
  }

  @Test
  void case10StaleLocks() {
    Mpirun.Job dead = fault("stale-lock-dead-holder", 60);
    everyRankVerified(dead, "1", 1);
    assertTrue(dead.stderr(0).contains("is dead"), dead.stderr(0));
    Mpirun.Job remote = fault("stale-lock-other-host", 60, Map.of("MPI_BUILD_CACHE_LOCK_STALE", "30"));
    everyRankVerified(remote, "1", 1);
    assertTrue(remote.stderr(0).contains("has not refreshed it"), remote.stderr(0));
  }

  @Test
  void case11RankWithoutDevice() {
    Mpirun.Job job = fault("no-device", 60);
    sameErrorEverywhere(job, "1", "BackendUnavailableException", "cannot run on ranks [1]",
        "no OpenCL platform with a device matches MPI_BUILD_OPENCL_PLATFORM='no-such-platform'");
  }

  @Test
  void case12ForeignBlobIsRefused() {
    Mpirun.Job job = fault("foreign-blob", 60);
    for (Line l : lines(job, "other-target")) {
      assertEquals("KernelLoadException", l.outcome());
      assertTrue(l.message().contains("built for target [another-device]"), l.message());
    }
    for (Line l : lines(job, "other-backend")) {
      assertEquals("KernelLoadException", l.outcome());
      assertTrue(l.message().contains("binary is for backend 'cuda'"), l.message());
    }
  }

  @Test
  void case13ChunkedBroadcast() {
    everyRankVerified(fault("chunked", 60), "1", 1);
  }

  @Test
  void case14FourJobsOnOneCacheFiveRounds() throws Exception {
    for (int round = 1; round <= 5; round++) {
      Path cache = Files.createTempDirectory("mpi-build-round" + round);
      long t0 = System.nanoTime();
      List<CompletableFuture<Mpirun.Job>> jobs = new ArrayList<>();
      for (int j = 0; j < 4; j++) {
        jobs.add(CompletableFuture.supplyAsync(
            () -> Mpirun.run(4, 240, Map.of("MPI_BUILD_CACHE_DIR", cache.toString()), "org.mpibuild.examples.Demo")));
      }
      int compiles = 0;
      StringBuilder all = new StringBuilder();
      for (CompletableFuture<Mpirun.Job> f : jobs) {
        Mpirun.Job job = f.join();
        all.append(job.describe()).append('\n');
        Matcher m = DemoIT.SUMMARY.matcher(DemoIT.summary(job));
        assertTrue(m.matches(), job.describe());
        assertEquals("4", m.group(4), "every rank verified\n" + job.describe());
        compiles += Integer.parseInt(m.group(2));
        assertTrue(job.orphans().isEmpty(), "processes left behind: " + job.orphans());
        Mpirun.delete(job.dir());
      }
      synchronized (MEASURED) {
        MEASURED.put("four-jobs-round-" + round, (System.nanoTime() - t0) / 1_000_000);
      }
      assertEquals(1, compiles, "round " + round + ": one compile across four jobs\n" + all);
      CacheAdmin check = CacheAdmin.open(cache, false);
      assertEquals(List.of(), check.verify(false), "no torn entry in round " + round);
      assertEquals(1, check.list().size());
      try (Stream<Path> s = Files.list(cache.resolve("entries"))) {
        assertEquals(1, s.count(), "no temporary file left in round " + round);
      }
      Mpirun.delete(cache);
    }
  }


  @Test
  void case15LiveRankThatNeverEntersEndsTheJobNamingIt() {
    Mpirun.Job job = Mpirun.run(4, 90, Map.of("MPI_BUILD_COLLECTIVE_TIMEOUT", "3"), "org.mpibuild.programs.Faults",
        "late-rank");
    try {
      synchronized (MEASURED) {
        MEASURED.put("late-rank", job.millis());
      }
      assertTrue(job.exitCode() != 0, "the job must be aborted\n" + job.describe());
      assertTrue(job.millis() < 30_000, "ended " + job.millis() + " ms after start, not at the 3 s deadline\n"
          + job.describe());
      String root = job.stderr(0);
      assertTrue(root.contains("ranks [2] of 4 did not enter the build of [saxpy] within 3 s"), job.describe());
      assertTrue(root.contains("waiting 1 s for ranks [2] to enter the build of [saxpy]"), job.describe());
      assertTrue(job.orphans().isEmpty(), "processes left behind: " + job.orphans());
    } finally {
      Mpirun.delete(job.dir());
    }
  }
}
