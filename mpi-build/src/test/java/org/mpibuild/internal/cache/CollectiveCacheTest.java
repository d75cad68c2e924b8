package org.mpibuild.internal.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.CompileException;
import org.mpibuild.KernelSource;
import org.mpibuild.internal.protocol.CollectiveBuild;
import org.mpibuild.internal.protocol.CollectiveBuildTest.RankResult;
import org.mpibuild.internal.protocol.CollectiveBuildTest;
import org.mpibuild.internal.protocol.JobCounters;
import org.mpibuild.internal.settings.CacheSettings;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.internal.settings.TestSettings;
import org.mpibuild.testkit.FakeBackend;
import org.mpibuild.testkit.InProcessCommunicator;

/** The cache inside the collective protocol, with several ranks in one JVM and a real directory. */
class CollectiveCacheTest {
  static final String SOURCE = "__kernel void k() {}";

  /** One job: {@code size} ranks, each with its own backend and caches, all on {@code cache}. */
  static List<RankResult> job(int size, int[] nodes, CacheSettings cache, List<FakeBackend> backends, KernelSource request)
      throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(size, 10_000, nodes);
    Settings settings = TestSettings.withCache(TestSettings.withChunkBytes(TestSettings.defaults(), 300), cache);
    return CollectiveBuildTest.onRanks(world, size, backends::get, (rank, comm, backend) -> {
      try (Caches caches = Caches.of(cache, comm.splitByNode())) {
        return new CollectiveBuild(comm, backend, settings, caches, new JobCounters()).run(request, 0);
      }
    });
  }

  static List<FakeBackend> backends(int size) {
    List<FakeBackend> b = new ArrayList<>();
    for (int i = 0; i < size; i++) {
      b.add(new FakeBackend());
    }
    return b;
  }

  static int compiles(List<FakeBackend> backends) {
    return backends.stream().mapToInt(b -> b.compiles.get()).sum();
  }

  static void allOk(List<RankResult> results) {
    for (int r = 0; r < results.size(); r++) {
      assertNull(results.get(r).error(), "rank " + r + ": " + results.get(r).error());
      assertTrue(FakeBackend.sameBinary(results.get(r).outcome().program(), SOURCE, 1000), "rank " + r);
    }
  }

  @Test
  void fileOperationsPerKernelDoNotGrowWithRanks(@TempDir Path tmp) throws Exception {
    long[] cold = new long[4];
    long[] warm = new long[4];
    int[] sizes = {1, 2, 4, 8};
    for (int i = 0; i < sizes.length; i++) {
      int n = sizes[i];
      CacheSettings cache = CacheSettings.in(tmp.resolve("n" + n));
      for (long[] into : new long[][] {cold, warm}) {
        List<RankResult> results = job(n, new int[n], cache, backends(n), KernelSource.of(SOURCE));
        allOk(results);
        for (RankResult r : results) {
          into[i] += r.outcome().stats().cacheFileOperations();
          if (r.outcome().stats().rank() != 0) {
            assertEquals(0, r.outcome().stats().cacheFileOperations(), "a non-root rank touched the cache");
          }
        }
      }
    }
    assertTrue(cold[0] > 0 && warm[0] > 0, "operations are counted");
    for (int i = 1; i < sizes.length; i++) {
      assertEquals(cold[0], cold[i], "cold build at " + sizes[i] + " ranks");
      assertEquals(warm[0], warm[i], "warm build at " + sizes[i] + " ranks");
    }
  }

  @Test
  void secondJobHitsAndCompilesNothing(@TempDir Path tmp) throws Exception {
    CacheSettings cache = CacheSettings.in(tmp);
    List<FakeBackend> first = backends(3);
    allOk(job(3, new int[3], cache, first, KernelSource.of(SOURCE)));
    List<FakeBackend> second = backends(3);
    List<RankResult> results = job(3, new int[3], cache, second, KernelSource.of(SOURCE));
    allOk(results);
    assertEquals(1, compiles(first));
    assertEquals(0, compiles(second));
    assertTrue(results.get(0).outcome().stats().cacheHit());
  }

  @Test
  void corruptedEntryIsRebuiltThroughTheProtocol(@TempDir Path tmp) throws Exception {
    CacheSettings cache = CacheSettings.in(tmp);
    allOk(job(2, new int[2], cache, backends(2), KernelSource.of(SOURCE)));
    Path entry;
    try (Stream<Path> s = Files.list(tmp.resolve("entries"))) {
      entry = s.findFirst().orElseThrow();
    }
    byte[] b = Files.readAllBytes(entry);
    b[b.length / 2] ^= 0x20;
    Files.write(entry, b);
    List<FakeBackend> again = backends(2);
    allOk(job(2, new int[2], cache, again, KernelSource.of(SOURCE)));
    assertEquals(1, compiles(again), "the corrupt entry was rebuilt, not loaded");
  }

  @Test
  void entryTheRootsDeviceRefusesIsMovedAsideAndRebuilt(@TempDir Path tmp) throws Exception {
    CacheSettings cache = CacheSettings.in(tmp);
    allOk(job(2, new int[2], cache, backends(2), KernelSource.of(SOURCE)));
    List<FakeBackend> again = backends(2);
    again.get(0).failNextLoads = 1;
    allOk(job(2, new int[2], cache, again, KernelSource.of(SOURCE)));
    assertEquals(1, compiles(again));
    assertEquals(1, KernelCache.open(cache).quarantined());
  }

  @Test
  void entriesOfAnotherTargetOrBackendAreNeverUsed(@TempDir Path tmp) throws Exception {
    CacheSettings cache = CacheSettings.in(tmp);
    allOk(job(2, new int[2], cache, backends(2), KernelSource.of(SOURCE)));
    List<FakeBackend> otherTarget = backends(2);
    otherTarget.forEach(b -> b.target = "fake-device-2");
    allOk(job(2, new int[2], cache, otherTarget, KernelSource.of(SOURCE)));
    assertEquals(1, compiles(otherTarget), "another target compiles its own");
    List<FakeBackend> otherBackend = backends(2);
    otherBackend.forEach(b -> b.id = "fake2");
    allOk(job(2, new int[2], cache, otherBackend, KernelSource.of(SOURCE)));
    assertEquals(1, compiles(otherBackend), "another backend compiles its own");
    assertEquals(3, KernelCache.open(cache).list().size());
  }

  @Test
  void nodeLocalCacheIsWrittenByOneRankPerNodeAndServesTheNextJob(@TempDir Path tmp) throws Exception {
    CacheSettings cache = CacheSettings.in(tmp.resolve("shared")).toBuilder().nodeDir(tmp.resolve("node")).build();
    int[] nodes = {0, 0, 1, 1};
    List<RankResult> results = job(4, nodes, cache, backends(4), KernelSource.of(SOURCE));
    allOk(results);
    // during the build only the root touches a cache (its lookups); the stores come after, on threads of their own
    for (RankResult r : results) {
      int rank = r.outcome().stats().rank();
      long ops = r.outcome().stats().cacheFileOperations();
      assertEquals(rank == 0, ops > 0, "rank " + rank + " made " + ops + " cache operations during the build");
    }
    try (Stream<Path> entries = Files.list(tmp.resolve("node/entries"))) {
      assertTrue(entries.anyMatch(Files::isRegularFile), "the node-local entry, written after the build");
    }
    // The next job finds the kernel in the node-local cache even if the shared one lost it.
    Files.walk(tmp.resolve("shared/entries")).filter(Files::isRegularFile).forEach(f -> f.toFile().delete());
    List<FakeBackend> next = backends(4);
    List<RankResult> again = job(4, nodes, cache, next, KernelSource.of(SOURCE));
    allOk(again);
    assertEquals(0, compiles(next));
    assertTrue(again.get(0).outcome().stats().cacheHit());
  }

  @Test
  void recentCompileFailureIsAnsweredFromTheNegativeEntry(@TempDir Path tmp) throws Exception {
    CacheSettings cache = CacheSettings.in(tmp).toBuilder().negativeTtl(Duration.ofSeconds(30)).build();
    KernelSource broken = KernelSource.of("syntax error");
    List<FakeBackend> first = backends(3);
    List<RankResult> a = job(3, new int[3], cache, first, broken);
    List<FakeBackend> second = backends(3);
    List<RankResult> b = job(3, new int[3], cache, second, broken);
    Throwable ea = CollectiveBuildTest.sameErrorEverywhere(a);
    Throwable eb = CollectiveBuildTest.sameErrorEverywhere(b);
    assertInstanceOf(CompileException.class, eb);
    assertEquals(ea.getMessage(), eb.getMessage());
    assertEquals(1, compiles(first));
    assertEquals(0, compiles(second), "the failure was answered from the negative entry");
  }

  @Test
  void aRequestWhoseIncludesCannotBeKnownIsBuiltButNeverCached(@TempDir Path tmp) throws Exception {
    CacheSettings cache = CacheSettings.in(tmp.resolve("c"));
    KernelSource computed = KernelSource.of("#define HDR <k.h>\n#include HDR\n" + SOURCE);
    for (int run = 1; run <= 2; run++) {
      List<FakeBackend> backends = backends(2);
      List<RankResult> results = job(2, new int[2], cache, backends, computed);
      for (RankResult r : results) {
        assertNull(r.error(), "run " + run + ": " + r.error());
        assertEquals("", r.outcome().envelope().metadata().cacheKey(), "no key: nothing stored");
      }
      assertEquals(1, compiles(backends), "run " + run + " compiles: a stale kernel is worse than a compile");
    }
    try (java.util.stream.Stream<Path> s = java.nio.file.Files.list(tmp.resolve("c/entries"))) {
      assertEquals(0, s.count());
    }
  }
}
