package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The collective build under a real mpirun at 1, 2, 4 and 8 ranks (oversubscribed on 2 cores), with the
 * real OpenCL backend on PoCL. One job per rank count runs every scenario of
 * {@link org.mpibuild.programs.Scenarios}; each test checks the outcome of every rank, not only the root's.
 */
class CollectiveBuildIT {
  private static final Pattern RESULT = Pattern.compile(
      "^RESULT scenario=(\\S+) rank=(\\d+) size=(\\d+) outcome=(\\S+) compiled=(\\S+) hit=(\\S+) verified=(\\S+)"
          + " message=(.*)$");
  private static final Map<Integer, Mpirun.Job> JOBS = new ConcurrentHashMap<>();

  record Result(String scenario, int rank, int size, String outcome, boolean compiled, boolean hit, boolean verified,
      String message) {}

  static Mpirun.Job job(int ranks) {
    return JOBS.computeIfAbsent(ranks, n -> Mpirun.run(n, 300, "org.mpibuild.programs.Scenarios"));
  }

  @AfterAll
  static void cleanUp() {
    JOBS.values().forEach(j -> Mpirun.delete(j.dir()));
  }

  /** Every rank's result of one scenario, in rank order; fails if a rank did not report. */
  static List<Result> results(int ranks, String scenario) {
    Mpirun.Job job = job(ranks);
    List<Result> out = new ArrayList<>();
    for (int r = 0; r < ranks; r++) {
      Result found = null;
      for (String line : job.stdoutByRank().get(r)) {
        Matcher m = RESULT.matcher(line);
        if (m.matches() && m.group(1).equals(scenario)) {
          found = new Result(m.group(1), Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3)), m.group(4),
              Boolean.parseBoolean(m.group(5)), Boolean.parseBoolean(m.group(6)), Boolean.parseBoolean(m.group(7)),
              m.group(8));
        }
      }
      if (found == null) {
        throw new AssertionError("rank " + r + " reported no result for " + scenario + "\n" + job.describe());
      }
      out.add(found);
    }
    return out;
  }

  static void allFailedAlike(List<Result> results, String exception, String mustContain) {
    String message = results.get(0).message();
    for (Result r : results) {
      assertEquals(exception, r.outcome(), "rank " + r.rank() + ": " + r.message());
      assertEquals(message, r.message(), "rank " + r.rank() + " reports another message than rank 0");
    }
    assertTrue(message.contains(mustContain), "message lacks '" + mustContain + "': " + message);
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 4, 8})
  void jobEndsCleanlyAfterEveryScenario(int ranks) {
    Mpirun.Job job = job(ranks);
    assertEquals(0, job.exitCode(), job.describe());
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 4, 8})
  void everyRankRunsTheKernelFromOneCompile(int ranks) {
    List<Result> results = results(ranks, "success");
    int compiles = 0;
    for (Result r : results) {
      assertEquals("ok", r.outcome(), "rank " + r.rank() + ": " + r.message());
      assertTrue(r.verified(), "rank " + r.rank() + " computed a wrong result");
      assertEquals(ranks, r.size());
      assertEquals(r.rank() == ranks - 1, r.compiled(), "rank " + r.rank() + " compiled: " + r.compiled());
      assertTrue(!r.hit(), "the job's cache starts empty");
      compiles += r.compiled() ? 1 : 0;
    }
    assertEquals(1, compiles);
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 4, 8})
  void compileErrorGivesEveryRankTheBuildLog(int ranks) {
    allFailedAlike(results(ranks, "compile-failure"), "CompileException", "undeclared_value");
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 4, 8})
  void invalidRootFailsEveryRank(int ranks) {
    allFailedAlike(results(ranks, "invalid-root"), "IllegalArgumentException",
        "root " + ranks + " is out of range");
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 4, 8})
  void unknownKernelNameFailsEveryRank(int ranks) {
    allFailedAlike(results(ranks, "unknown-kernel"), "IllegalArgumentException", "unknown kernel name 'nope'");
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4, 8})
  void mismatchNamesTheDifferingRankEverywhere(int ranks) {
    allFailedAlike(results(ranks, "mismatch"), "RequestMismatchException",
        "rank " + (ranks - 1) + " differs in options");
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4, 8})
  void loadFailureOnOneRankFailsEveryRank(int ranks) {
    List<Result> results = results(ranks, "load-failure");
    allFailedAlike(results, "KernelLoadException", "rank 1: ");
    assertTrue(results.get(0).message().contains("could not be loaded on 1 of " + ranks + " ranks [1]"),
        results.get(0).message());
    assertTrue(results.get(0).message().contains("CL_INVALID_BINARY"), results.get(0).message());
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4, 8})
  void callerCommunicatorServesEachHalfFromTheCache(int ranks) {
    List<Result> results = results(ranks, "sub-communicator");
    int compiles = 0;
    int hits = 0;
    for (Result r : results) {
      assertEquals("ok", r.outcome(), "world rank " + r.rank() + ": " + r.message());
      assertTrue(r.verified());
      compiles += r.compiled() ? 1 : 0;
      hits += r.hit() ? 1 : 0;
    }
    assertEquals(0, compiles, "the 'success' scenario already cached this kernel");
    assertEquals(2, hits, "one cache hit for the even ranks' root, one for the odd ranks'");
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 4, 8})
  void nodeLocalCacheIsWrittenOnceOnThisNode(int ranks) {
    for (Result r : results(ranks, "node-cache")) {
      assertEquals("ok", r.outcome(), "rank " + r.rank() + ": " + r.message());
      assertTrue(r.verified());
    }
    assertTrue(job(ranks).stdoutByRank().get(0).contains("NODE-CACHE entries=1"), job(ranks).describe());
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 4, 8})
  void smallChunksCarryTheWholeBinary(int ranks) {
    for (Result r : results(ranks, "chunked")) {
      assertEquals("ok", r.outcome(), "rank " + r.rank() + ": " + r.message());
      assertTrue(r.verified());
    }
  }
}
