package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The demo, as `make demo` runs it: 4 ranks, a summary counted from what the ranks did, and the cache. */
class DemoIT {
  static final Pattern SUMMARY = Pattern.compile(
      "^summary: ranks=(\\d+) compiles=(\\d+) loaded=(\\d+) verified=(\\d+) backend=opencl cache_hits=(\\d+)$");

  Path cache;

  @BeforeEach
  void freshCache() throws Exception {
    cache = Files.createTempDirectory("mpi-build-demo-cache");
  }

  @AfterEach
  void removeCache() {
    Mpirun.delete(cache);
  }

  static Mpirun.Job demo(Path cache) {
    return Mpirun.run(4, 300, Map.of("MPI_BUILD_CACHE_DIR", cache.toString()), "org.mpibuild.examples.Demo");
  }

  static String summary(Mpirun.Job job) {
    assertEquals(0, job.exitCode(), job.describe());
    List<String> root = job.stdoutByRank().get(0);
    assertTrue(!root.isEmpty(), job.describe());
    return root.get(root.size() - 1);
  }

  @Test
  void demoPrintsTheCountedSummary() throws Exception {
    Path json = cache.resolve("stats.json");
    Mpirun.Job job = Mpirun.run(4, 300, Map.of("MPI_BUILD_CACHE_DIR", cache.resolve("c").toString(),
        "MPI_BUILD_STATS_JSON", json.toString()), "org.mpibuild.examples.Demo");
    try {
      String stats = Files.readString(json);
      assertTrue(stats.startsWith("{\"ranks\": 4, \"builds\": 1, \"compiles\": 1, \"cache_hits\": 0, \"cache_misses\": 1,"),
          stats);
      assertEquals("summary: ranks=4 compiles=1 loaded=4 verified=4 backend=opencl cache_hits=0", summary(job),
          job.describe());
      List<String> root = job.stdoutByRank().get(0);
      long rows = root.stream().filter(l -> l.matches("\\s+\\d+\\s+(root|receiver)\\s.*\\syes$")).count();
      assertEquals(4, rows, "one verified table row per rank\n" + job.describe());
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  @Test
  void secondRunWithTheSameCacheCompilesNothing() {
    Mpirun.Job first = demo(cache);
    Mpirun.Job second = demo(cache);
    try {
      assertEquals("summary: ranks=4 compiles=1 loaded=4 verified=4 backend=opencl cache_hits=0", summary(first));
      assertEquals("summary: ranks=4 compiles=0 loaded=4 verified=4 backend=opencl cache_hits=1", summary(second),
          second.describe());
    } finally {
      Mpirun.delete(first.dir());
      Mpirun.delete(second.dir());
    }
  }

  @Test
  void twoJobsStartingTogetherOnOneEmptyCacheCompileOnce() {
    CompletableFuture<Mpirun.Job> a = CompletableFuture.supplyAsync(() -> demo(cache));
    CompletableFuture<Mpirun.Job> b = CompletableFuture.supplyAsync(() -> demo(cache));
    Mpirun.Job ja = a.join();
    Mpirun.Job jb = b.join();
    try {
      int compiles = 0;
      int hits = 0;
      for (Mpirun.Job j : List.of(ja, jb)) {
        Matcher m = SUMMARY.matcher(summary(j));
        assertTrue(m.matches(), j.describe());
        assertEquals("4", m.group(4), "every rank verified its kernel\n" + j.describe());
        compiles += Integer.parseInt(m.group(2));
        hits += Integer.parseInt(m.group(5));
      }
      assertEquals(1, compiles, "one compile across both jobs\n" + ja.describe() + "\n" + jb.describe());
      assertEquals(1, hits, "the other job read the entry");
    } finally {
      Mpirun.delete(ja.dir());
      Mpirun.delete(jb.dir());
    }
  }

  @Test
  void ringExampleOwnsMpiAndEveryRankVerifiesTheKernel() {
    Mpirun.Job job = Mpirun.run(3, 300, Map.of("MPI_BUILD_CACHE_DIR", cache.toString()), "org.mpibuild.examples.Ring");
    try {
      assertEquals("ring: 3 of 3 ranks verified the kernel rank 0 compiled", summary(job), job.describe());
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  /**
   * A cache entry signed by a key this user does not trust (another user's, a forger's) is never loaded: it
   * is rebuilt, counted, and replaced by one signed with the user's own key.
   */
  @Test
  void entriesSignedByAnUntrustedKeyAreRebuiltAndCounted() throws Exception {
    Path keys = Files.createTempDirectory("mpi-build-keys");
    try {
      Mpirun.Job mallory = Mpirun.run(4, 300, Map.of("MPI_BUILD_CACHE_DIR", cache.toString(),
          "MPI_BUILD_SIGNING_KEY", keys.resolve("mallory").toString()), "org.mpibuild.examples.Demo");
      assertTrue(summary(mallory).contains("compiles=1"), mallory.describe());
      Mpirun.delete(mallory.dir());
      Path json = keys.resolve("stats.json");
      Mpirun.Job user = Mpirun.run(4, 300, Map.of("MPI_BUILD_CACHE_DIR", cache.toString(),
          "MPI_BUILD_SIGNING_KEY", keys.resolve("user").toString(), "MPI_BUILD_STATS_JSON", json.toString()),
          "org.mpibuild.examples.Demo");
      assertEquals("summary: ranks=4 compiles=1 loaded=4 verified=4 backend=opencl cache_hits=0", summary(user),
          "mallory's entry is not loaded: rebuilt\n" + user.describe());
      assertTrue(Files.readString(json).contains("\"untrusted_entries\": 1,"), Files.readString(json));
      Mpirun.delete(user.dir());
      Mpirun.Job again = Mpirun.run(4, 300, Map.of("MPI_BUILD_CACHE_DIR", cache.toString(),
          "MPI_BUILD_SIGNING_KEY", keys.resolve("user").toString()), "org.mpibuild.examples.Demo");
      assertEquals("summary: ranks=4 compiles=0 loaded=4 verified=4 backend=opencl cache_hits=1", summary(again),
          "the user's own entry is trusted\n" + again.describe());
      Mpirun.delete(again.dir());
    } finally {
      Mpirun.delete(keys);
    }
  }
}
