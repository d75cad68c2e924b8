package org.mpibuild.internal.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.CompileException;
import org.mpibuild.CorruptBinaryException;
import org.mpibuild.KernelSource;
import org.mpibuild.internal.cache.Caches;
import org.mpibuild.internal.protocol.CollectiveBuildTest.RankResult;
import org.mpibuild.internal.settings.CacheSettings;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.internal.settings.TestSettings;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.internal.wire.Payload;
import org.mpibuild.internal.wire.SharePlan;
import org.mpibuild.testkit.FakeBackend;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * A compile the root shares with the ranks that wait for it ({@link SharedCompile}), with several ranks in one JVM:
 * every rank must end with the binary the root would have made alone, or with the same error.
 */
class SharedCompileTest {
  static final String SOURCE = CollectiveBuildTest.SOURCE;

  /** Settings with {@code MPI_BUILD_COMPILE_SHARE} at {@code share} (null: the default), a small chunk. */
  static Settings sharing(Integer share, CacheSettings cache) {
    Properties p = new Properties();
    if (share != null) {
      p.setProperty("mpibuild.compileShare", share.toString());
    }
    Settings s = TestSettings.withChunkBytes(TestSettings.from(p, Map.of()), 300);
    return cache == null ? s : TestSettings.withCache(s, cache);
  }

  /** {@code size} fake backends that split a compile into up to {@code parts} parts. */
  static List<FakeBackend> backends(int size, int parts) {
    List<FakeBackend> out = new ArrayList<>();
    for (int r = 0; r < size; r++) {
      FakeBackend b = new FakeBackend();
      b.parts = parts;
      out.add(b);
    }
    return out;
  }

  static List<RankResult> job(List<FakeBackend> backends, Settings settings, String source, int root) throws Exception {
    int size = backends.size();
    return CollectiveBuildTest.onRanks(new InProcessCommunicator.World(size, 10_000), size, backends::get,
        (rank, comm, backend) -> new CollectiveBuild(comm, backend, settings).run(KernelSource.of(source), root));
  }

  static void everyRankHasTheWholeBinary(List<RankResult> results) {
    for (int r = 0; r < results.size(); r++) {
      assertNull(results.get(r).error(), "rank " + r + ": " + results.get(r).error());
      assertTrue(FakeBackend.sameBinary(results.get(r).outcome().program(), SOURCE, 1000), "rank " + r);
    }
  }

  @Test
  void twoRanksEachCompileAPartAndNobodyCompilesTheWhole() throws Exception {
    List<FakeBackend> b = backends(2, 4);
    everyRankHasTheWholeBinary(job(b, sharing(null, null), SOURCE, 0));
    assertEquals(List.of("0/2"), b.get(0).partsCompiled);
    assertEquals(List.of("1/2"), b.get(1).partsCompiled);
    assertEquals(0, b.get(0).compiles.get() + b.get(1).compiles.get());
  }

  @Test
  void thePartsBytesAreCountedWhereTheyWereSent() throws Exception {
    List<FakeBackend> b = backends(2, 2);
    Settings settings = sharing(null, null);
    List<JobCounters> counters = List.of(new JobCounters(), new JobCounters());
    everyRankHasTheWholeBinary(CollectiveBuildTest.onRanks(new InProcessCommunicator.World(2, 10_000), 2, b::get,
        (rank, comm, backend) -> new CollectiveBuild(comm, backend, settings, org.mpibuild.internal.cache.Caches.none(),
            counters.get(rank)).run(KernelSource.of(SOURCE), 0)));
    assertEquals(1000, counters.get(0).toArray()[JobCounters.BYTES_BROADCAST], "the root sent the joined binary");
    assertEquals(500, counters.get(1).toArray()[JobCounters.BYTES_BROADCAST], "rank 1 sent its half");
  }

  @Test
  void theSettingCapsTheRanksThatSharePartsGoInTurnAfterTheRoot() throws Exception {
    List<FakeBackend> b = backends(5, 8);
    everyRankHasTheWholeBinary(job(b, sharing(3, null), SOURCE, 3));
    assertEquals(List.of("0/3"), b.get(3).partsCompiled);
    assertEquals(List.of("1/3"), b.get(4).partsCompiled);
    assertEquals(List.of("2/3"), b.get(0).partsCompiled);
    assertEquals(List.of(), b.get(1).partsCompiled);
    assertEquals(List.of(), b.get(2).partsCompiled);
  }

  @Test
  void shareOneMeansTheRootCompilesAlone() throws Exception {
    List<FakeBackend> b = backends(3, 4);
    everyRankHasTheWholeBinary(job(b, sharing(1, null), SOURCE, 0));
    assertEquals(1, b.get(0).compiles.get());
    assertTrue(b.stream().allMatch(x -> x.partCompiles.get() == 0));
  }

  @Test
  void aBackendThatCannotSplitCompilesAsBefore() throws Exception {
    List<FakeBackend> b = backends(3, 0);
    everyRankHasTheWholeBinary(job(b, sharing(null, null), SOURCE, 1));
    assertEquals(1, b.get(1).compiles.get());
    assertTrue(b.stream().allMatch(x -> x.partCompiles.get() == 0));
  }

  @Test
  void byDefaultRanksShareOnlyWhereTheNodeHasACoreForEach() throws Exception {
    assertEquals(2, ShareSteps.ranks(0, 2, 2));
    assertEquals(2, ShareSteps.ranks(0, 1, 64));
    assertEquals(1, ShareSteps.ranks(0, 16, 2));
    assertEquals(4, ShareSteps.ranks(4, 16, 2), "a value set is taken as it is");
    List<FakeBackend> b = backends(3, 3);
    Settings settings = sharing(null, null);
    List<RankResult> results = CollectiveBuildTest.onRanks(new InProcessCommunicator.World(3, 10_000), 3, b::get,
        (rank, comm, backend) -> new CollectiveBuild(comm, backend, settings).onNode(3, 2)
            .run(KernelSource.of(SOURCE), 0));
    everyRankHasTheWholeBinary(results);
    assertEquals(1, b.get(0).compiles.get(), "3 ranks on 2 cores: the root compiles alone");
    assertTrue(b.stream().allMatch(x -> x.partCompiles.get() == 0));
  }

  /**
   * Rank 0 and the ranks that share its compiles prepare a compile ahead, once, when the protocol learns its node;
   * nobody in a job of one rank (its builds are its own, in its own process), on a node with more ranks than cores,
   * or where {@code MPI_BUILD_COMPILE_AHEAD} is 0.
   */
  @Test
  void theRanksLikelyToCompilePrepareAheadUnlessTheSettingIsOff() throws Exception {
    for (String ahead : new String[] {null, "0"}) {
      Properties p = new Properties();
      p.setProperty("mpibuild.compileShare", "2");
      if (ahead != null) {
        p.setProperty("mpibuild.compileAhead", ahead);
      }
      Settings settings = TestSettings.from(p, Map.of());
      List<FakeBackend> b = backends(3, 3);
      everyRankHasTheWholeBinary(CollectiveBuildTest.onRanks(new InProcessCommunicator.World(3, 10_000), 3, b::get,
          (rank, comm, backend) -> new CollectiveBuild(comm, backend, settings).onNode(3, 8)
              .run(KernelSource.of(SOURCE), 0)));
      List<Integer> prepared = b.stream().map(x -> x.prepares.get()).toList();
      assertEquals(ahead == null ? List.of(1, 1, 0) : List.of(0, 0, 0), prepared, "MPI_BUILD_COMPILE_AHEAD=" + ahead);
    }
    List<FakeBackend> crowded = backends(3, 3);
    everyRankHasTheWholeBinary(CollectiveBuildTest.onRanks(new InProcessCommunicator.World(3, 10_000), 3, crowded::get,
        (rank, comm, backend) -> new CollectiveBuild(comm, backend, sharing(2, null)).onNode(3, 2)
            .run(KernelSource.of(SOURCE), 0)));
    assertEquals(List.of(0, 0, 0), crowded.stream().map(x -> x.prepares.get()).toList(),
        "3 ranks on 2 cores: no idle time to warm up in");
    FakeBackend alone = new FakeBackend();
    CollectiveBuildTest.onRanks(new InProcessCommunicator.World(1, 10_000), 1, r -> alone,
        (rank, comm, backend) -> new CollectiveBuild(comm, backend, sharing(null, null)).onNode(1, 8)
            .run(KernelSource.of(SOURCE), 0));
    assertEquals(0, alone.prepares.get(), "one rank prepares nothing");
  }

  @Test
  void asynchronousBuildsDoNotTakeTheOtherRanksCores() throws Exception {
    List<FakeBackend> b = backends(2, 2);
    Settings settings = sharing(null, null);
    List<RankResult> results = CollectiveBuildTest.onRanks(new InProcessCommunicator.World(2, 10_000), 2, b::get,
        (rank, comm, backend) -> new CollectiveBuild(comm, backend, settings).over(c -> c)
            .run(KernelSource.of(SOURCE), 0));
    everyRankHasTheWholeBinary(results);
    assertEquals(1, b.get(0).compiles.get());
    assertTrue(b.stream().allMatch(x -> x.partCompiles.get() == 0));
  }

  @Test
  void aPartThatFailsOnItsRankIsCompiledByTheRootAndNothingIsLost() throws Exception {
    List<FakeBackend> b = backends(3, 3);
    b.get(2).partFailure = new IllegalStateException("out of memory (test)");
    everyRankHasTheWholeBinary(job(b, sharing(3, null), SOURCE, 0));
    assertEquals(List.of("0/3", "2/3"), b.get(0).partsCompiled);
    assertEquals(List.of("1/3"), b.get(1).partsCompiled);
  }

  @Test
  void partsThatDoNotJoinAreReplacedByTheRootsWholeCompile() throws Exception {
    List<FakeBackend> b = backends(2, 2);
    b.get(0).joinFailure = new IllegalArgumentException("PoCL binaries of different programs (test)");
    everyRankHasTheWholeBinary(job(b, sharing(null, null), SOURCE, 0));
    assertEquals(1, b.get(0).compiles.get());
  }

  @Test
  void aSourceThatDoesNotCompileFailsEveryRankWithTheRootsError() throws Exception {
    List<FakeBackend> b = backends(3, 3);
    b.forEach(x -> x.buildLog = "\nnote: the log");
    List<RankResult> results = job(b, sharing(3, null), "__kernel void main() { syntax error }", 0);
    String message = null;
    for (int r = 0; r < 3; r++) {
      CompileException e = assertInstanceOf(CompileException.class, results.get(r).error(), "rank " + r);
      assertTrue(e.buildLog().contains("note: the log"), e.buildLog());
      message = message == null ? e.getMessage() : message;
      assertEquals(message, e.getMessage(), "rank " + r);
    }
  }

  @Test
  void theCacheKeepsTheJoinedBinaryAndAWarmJobSharesNothing(@TempDir Path tmp) throws Exception {
    CacheSettings cache = CacheSettings.in(tmp);
    Settings settings = sharing(null, cache);
    for (int job = 0; job < 2; job++) {
      List<FakeBackend> b = backends(2, 2);
      int size = b.size();
      List<RankResult> results = CollectiveBuildTest.onRanks(new InProcessCommunicator.World(size, 10_000), size,
          b::get, (rank, comm, backend) -> {
            try (Caches caches = Caches.of(cache, comm.splitByNode())) {
              return new CollectiveBuild(comm, backend, settings, caches, new JobCounters()).run(KernelSource.of(SOURCE), 0);
            }
          });
      everyRankHasTheWholeBinary(results);
      assertEquals(job == 0 ? 2 : 0, b.get(0).partCompiles.get() + b.get(1).partCompiles.get(), "job " + job);
      assertEquals(0, b.get(0).compiles.get(), "job " + job);
    }
  }

  @Test
  void thePlanTravelsWholeAndACorruptOneIsRefused() {
    List<String> parts = List.of("mm_0\t4-4-1-goffs0-smallgrid\n", "mm_1\t8-8-1\nmm_2\t16-16-1\n", "ü");
    assertEquals(parts, SharePlan.parts(plan(SharePlan.encode(parts))));
    byte[] good = SharePlan.encode(parts);
    byte[] cut = java.util.Arrays.copyOf(good, good.length - 1);
    assertThrows(CorruptBinaryException.class, () -> SharePlan.parts(plan(cut)));
    byte[] longer = java.util.Arrays.copyOf(good, good.length + 1);
    assertThrows(CorruptBinaryException.class, () -> SharePlan.parts(plan(longer)));
    byte[] huge = good.clone();
    huge[7] = 0x7f; // the first part's length
    assertTrue(assertThrows(CorruptBinaryException.class, () -> SharePlan.parts(plan(huge))).getMessage()
        .contains("part 0"));
    assertThrows(CorruptBinaryException.class, () -> SharePlan.parts(plan(SharePlan.encode(List.of("one")))));
  }

  @Test
  void aPlanIsNeverAFailure() {
    assertThrows(IllegalArgumentException.class, () -> Envelope.failure(Envelope.Status.SHARE,
        Envelope.Metadata.errorOnly("fake", "x")));
  }

  private static Envelope plan(byte[] payload) {
    return Envelope.share(Envelope.Metadata.errorOnly("fake", ""), Payload.copyOf(payload));
  }
}
