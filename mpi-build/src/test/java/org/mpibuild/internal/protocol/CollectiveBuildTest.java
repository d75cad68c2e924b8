package org.mpibuild.internal.protocol;

import org.mpibuild.testkit.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.mpibuild.CompileException;
import org.mpibuild.KernelBuildException;
import org.mpibuild.KernelLoadException;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;
import org.mpibuild.RequestMismatchException;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.internal.settings.TestSettings;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.internal.wire.Payload;
import org.mpibuild.spi.Communicator;
import org.mpibuild.testkit.InProcessCommunicator;

/** The protocol with several ranks in one JVM: every rank's outcome is checked, never only the root's. */
public class CollectiveBuildTest {
  public static final String SOURCE = "__kernel void main() {}";
  static final Settings SETTINGS = TestSettings.local(256, 1L << 30);

  /** What one rank ended with: an outcome or an exception. */
  public record RankResult(Outcome outcome, Throwable error) {}

  public interface RankBody {
    Outcome run(int rank, Communicator comm, FakeBackend backend);
  }

  public static List<RankResult> onRanks(InProcessCommunicator.World world, int size, IntFunction<FakeBackend> backends,
      RankBody body) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(size);
    try {
      List<Future<Outcome>> futures = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        int rank = r;
        FakeBackend backend = backends.apply(rank);
        futures.add(pool.submit(() -> body.run(rank, world.rank(rank), backend)));
      }
      List<RankResult> out = new ArrayList<>();
      for (Future<Outcome> f : futures) {
        try {
          out.add(new RankResult(f.get(30, TimeUnit.SECONDS), null));
        } catch (java.util.concurrent.ExecutionException e) {
          out.add(new RankResult(null, e.getCause()));
        }
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  static List<RankResult> build(int size, IntFunction<FakeBackend> backends, IntFunction<KernelSource> requests,
      IntFunction<Integer> roots, InProcessCommunicator.World world) throws Exception {
    return onRanks(world, size, backends,
        (rank, comm, backend) -> new CollectiveBuild(comm, backend, SETTINGS).run(requests.apply(rank), roots.apply(rank)));
  }

  static List<RankResult> build(int size, IntFunction<FakeBackend> backends, IntFunction<KernelSource> requests,
      IntFunction<Integer> roots) throws Exception {
    return build(size, backends, requests, roots, new InProcessCommunicator.World(size, 10_000));
  }

  /** Asserts every rank threw the same type with the same message, and returns it. */
  public static Throwable sameErrorEverywhere(List<RankResult> results) {
    Throwable first = results.get(0).error();
    assertNotNull(first, "rank 0 should have failed");
    for (int r = 0; r < results.size(); r++) {
      Throwable e = results.get(r).error();
      assertNotNull(e, "rank " + r + " returned a kernel while others failed");
      assertEquals(first.getClass(), e.getClass(), "rank " + r + " threw another type: " + e);
      assertEquals(first.getMessage(), e.getMessage(), "rank " + r + " has another message");
    }
    return first;
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2, 3, 4, 8})
  void everyRankGetsTheRootsBinaryFromOneCompile(int size) throws Exception {
    List<FakeBackend> backends = new ArrayList<>();
    for (int r = 0; r < size; r++) {
      backends.add(new FakeBackend());
    }
    int root = size - 1;
    List<RankResult> results = build(size, backends::get, r -> KernelSource.of(SOURCE).withKernels("k1", "k2"), r -> root);
    int compiles = 0;
    for (int r = 0; r < size; r++) {
      RankResult res = results.get(r);
      assertNull(res.error(), "rank " + r + ": " + res.error());
      assertTrue(FakeBackend.sameBinary(res.outcome().program(), SOURCE, 1000), "rank " + r + " got another binary");
      assertEquals(List.of("k1", "k2"), res.outcome().program().kernelNames());
      assertEquals(r == root, res.outcome().stats().compiled());
      assertEquals(1000, res.outcome().stats().binaryBytes());
      assertEquals(r == root ? 0 : 1, backends.get(r).loads.get(), "loads on rank " + r);
      compiles += backends.get(r).compiles.get();
    }
    assertEquals(1, compiles);
  }

  /** A backend that builds one binary for every target in the job, like a CUDA fatbin. */
  static final class MultiTarget extends FakeBackend {
    MultiTarget(String target) {
      this.target = target;
    }

    @Override
    public boolean buildsForJobTargets() {
      return true;
    }

    @Override
    public String buildTarget(List<String> rankTargets) {
      return String.join(",", new java.util.TreeSet<>(rankTargets));
    }

    @Override
    public boolean canLoad(String binaryTarget) {
      return List.of(binaryTarget.split(",")).contains(target);
    }
  }

  @Test
  void mixedJobGetsOneBinaryForEveryTargetInIt() throws Exception {
    List<FakeBackend> backends = List.of(new MultiTarget("sm_90"), new MultiTarget("sm_80"), new MultiTarget("sm_90"));
    List<RankResult> results = build(3, backends::get, r -> KernelSource.of(SOURCE), r -> 0);
    for (int r = 0; r < 3; r++) {
      assertNull(results.get(r).error(), "rank " + r + ": " + results.get(r).error());
      assertEquals("sm_80,sm_90", results.get(r).outcome().envelope().metadata().target());
    }
    assertEquals(1, backends.stream().mapToInt(b -> b.compiles.get()).sum());
  }

  @Test
  void binaryOnlyBuildLoadsNothing() throws Exception {
    List<FakeBackend> backends = List.of(new FakeBackend(), new FakeBackend(), new FakeBackend());
    List<RankResult> results = onRanks(new InProcessCommunicator.World(3, 10_000), 3, backends::get,
        (rank, comm, backend) -> new CollectiveBuild(comm, backend, SETTINGS).run(KernelSource.of(SOURCE), 0, false));
    for (RankResult r : results) {
      assertNull(r.error());
      assertNull(r.outcome().program());
      assertEquals(1000, r.outcome().envelope().payload().length());
    }
    assertEquals(0, backends.stream().mapToInt(b -> b.loads.get()).sum());
  }

  @Test
  void payloadTravelsInConfiguredChunks() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 10_000);
    List<RankResult> results = build(3, r -> new FakeBackend(), r -> KernelSource.of(SOURCE), r -> 0, world);
    for (RankResult res : results) {
      assertNull(res.error());
      assertTrue(FakeBackend.sameBinary(res.outcome().program(), SOURCE, 1000));
    }
    List<InProcessCommunicator.Call> mine = world.calls().stream()
        .filter(c -> c.rank() == 1 && c.operation().equals("broadcast")).toList();
    // A 256-byte first message (header, metadata, start of the binary), then the rest of the 1000-byte
    // binary in pieces of at most one 256-byte chunk.
    assertEquals(256, mine.get(0).bytes());
    assertTrue(mine.size() >= 5, "the binary was chunked: " + mine);
    assertTrue(mine.stream().allMatch(c -> c.bytes() <= 256), "no message exceeds the chunk size: " + mine);
  }

  @Test
  void smallKernelTravelsInOneBroadcast() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 10_000);
    List<RankResult> results = onRanks(world, 2, r -> new FakeBackend(), (rank, comm, backend) ->
        new CollectiveBuild(comm, backend, TestSettings.withChunkBytes(SETTINGS, 1 << 20)).run(KernelSource.of(SOURCE), 0));
    results.forEach(res -> assertNull(res.error()));
    assertEquals(1, world.calls().stream().filter(c -> c.rank() == 1 && c.operation().equals("broadcast")).count());
  }

  @Test
  void differentChunkSizesAreCaughtBeforeAnyTransfer() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 10_000);
    List<RankResult> results = onRanks(world, 2, r -> new FakeBackend(), (rank, comm, backend) ->
        new CollectiveBuild(comm, backend, TestSettings.withChunkBytes(SETTINGS, rank == 0 ? 256 : 512)).run(KernelSource.of(SOURCE), 0));
    RequestMismatchException e = assertInstanceOf(RequestMismatchException.class, sameErrorEverywhere(results));
    assertTrue(e.getMessage().contains("differs in chunk-size"), e.getMessage());
    assertTrue(world.calls().stream().noneMatch(c -> c.operation().equals("broadcast")));
  }

  /** A 75 MB log once aborted the job: the root sent metadata over the limit that its receivers accept. */
  @Test
  void aBuildLogTooLongForTheWireArrivesCutOnEveryRank() throws Exception {
    String log = "first error here\n" + "x".repeat(75_000_000) + "\nlast line here";
    IntFunction<FakeBackend> chatty = r -> {
      FakeBackend b = new FakeBackend();
      b.buildLog = log;
      return b;
    };
    List<RankResult> built = build(3, chatty, r -> KernelSource.of(SOURCE), r -> 0);
    for (RankResult res : built) {
      assertNull(res.error(), String.valueOf(res.error()));
      assertLogCut(res.outcome().envelope().metadata().buildLog());
    }
    Throwable e = sameErrorEverywhere(build(3, chatty, r -> KernelSource.of("syntax error"), r -> 0));
    assertInstanceOf(CompileException.class, e);
    assertLogCut(((CompileException) e).buildLog());
  }

  static void assertLogCut(String received) {
    int bytes = received.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
    assertTrue(bytes <= Envelope.MAX_BUILD_LOG_BYTES, bytes + " bytes");
    assertTrue(received.contains("first error here") && received.endsWith("last line here"), "head or tail lost");
    assertTrue(received.contains("bytes of build log, too long to send"), "the cut is not marked");
  }

  @Test
  void compileFailureReachesEveryRankWithTheLog() throws Exception {
    List<RankResult> results = build(4, r -> new FakeBackend(), r -> KernelSource.of("syntax error"), r -> 1);
    Throwable e = sameErrorEverywhere(results);
    assertInstanceOf(CompileException.class, e);
    assertEquals("line 1: syntax error here", ((CompileException) e).buildLog());
    assertTrue(e.getMessage().contains("root 1"), e.getMessage());
  }

  @Test
  void unexpectedRootFailureReachesEveryRank() throws Exception {
    List<RankResult> results = build(3, r -> {
      FakeBackend b = new FakeBackend();
      b.compileFailure = new IllegalStateException("device lost");
      return b;
    }, r -> KernelSource.of(SOURCE), r -> 0);
    Throwable e = sameErrorEverywhere(results);
    assertEquals(KernelBuildException.class, e.getClass());
    assertTrue(e.getMessage().contains("device lost"), e.getMessage());
  }

  @Test
  void hungCompileTimesOutOnEveryRank() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 10_000);
    long t0 = System.nanoTime();
    List<RankResult> results = onRanks(world, 3, r -> {
      FakeBackend b = new FakeBackend();
      b.compileSleepMillis = 60_000;
      return b;
    }, (rank, comm, backend) -> new CollectiveBuild(comm, backend,
        TestSettings.withCompileTimeout(SETTINGS, java.time.Duration.ofMillis(500))).run(KernelSource.of(SOURCE), 0));
    long ms = (System.nanoTime() - t0) / 1_000_000;
    Throwable e = sameErrorEverywhere(results);
    assertEquals(org.mpibuild.BuildTimeoutException.class, e.getClass());
    assertTrue(e.getMessage().contains("0.5 s"), e.getMessage());
    assertTrue(ms < 5000, "took " + ms + " ms");
  }

  @Test
  void crashingCompilerReachesEveryRank() throws Exception {
    List<RankResult> crashed = onRanks(new InProcessCommunicator.World(3, 10_000), 3, r -> new FakeBackend() {
      @Override
      public org.mpibuild.spi.Compilation compile(KernelSource request) {
        throw new InternalError("compiler crashed: SIGSEGV in the code generator");
      }
    }, (rank, comm, backend) -> new CollectiveBuild(comm, backend, SETTINGS).run(KernelSource.of(SOURCE), 0));
    Throwable e = sameErrorEverywhere(crashed);
    assertEquals(KernelBuildException.class, e.getClass());
    assertTrue(e.getMessage().contains("SIGSEGV"), e.getMessage());
  }

  @Test
  void invalidRequestFromTheBackendReachesEveryRank() throws Exception {
    List<RankResult> results = build(3, r -> {
      FakeBackend b = new FakeBackend();
      b.compileFailure = new IllegalArgumentException("unknown kernel name 'nope'");
      return b;
    }, r -> KernelSource.of(SOURCE).withKernels("nope"), r -> 0);
    Throwable e = sameErrorEverywhere(results);
    assertInstanceOf(IllegalArgumentException.class, e);
    assertTrue(e.getMessage().contains("'nope'"));
  }

  @Test
  void differentSourceOnOneRankIsNamedOnEveryRank() throws Exception {
    List<RankResult> results = build(4, r -> new FakeBackend(),
        r -> KernelSource.of(r == 2 ? SOURCE + " " : SOURCE), r -> 0);
    RequestMismatchException e = assertInstanceOf(RequestMismatchException.class, sameErrorEverywhere(results));
    assertEquals(Map.of(2, List.of("source")), e.differingRanks());
    assertTrue(e.getMessage().contains("rank 2 differs in source"), e.getMessage());
  }

  @Test
  void differentOptionsKernelsAndRootsAreNamed() throws Exception {
    List<RankResult> results = build(5, r -> new FakeBackend(),
        r -> r == 1 ? KernelSource.of(SOURCE).withOptions("-O3")
            : r == 3 ? KernelSource.of(SOURCE).withKernels("other") : KernelSource.of(SOURCE),
        r -> r == 4 ? 1 : 0);
    RequestMismatchException e = assertInstanceOf(RequestMismatchException.class, sameErrorEverywhere(results));
    assertEquals(Map.of(1, List.of("options"), 3, List.of("kernels"), 4, List.of("root")), e.differingRanks());
  }

  @Test
  void differentLaunchShapesAreNamed() throws Exception {
    KernelSource base = KernelSource.of(SOURCE).withLaunchShapes(LaunchShape.of("main", 16, 16));
    List<RankResult> results = build(3, r -> new FakeBackend(),
        r -> r == 2 ? base.withLaunchShapes(LaunchShape.of("main", 8, 8)) : base, r -> 0);
    RequestMismatchException e = assertInstanceOf(RequestMismatchException.class, sameErrorEverywhere(results));
    assertEquals(Map.of(2, List.of("launch-shapes")), e.differingRanks());
  }

  @Test
  void badLaunchShapesGiveTheSameErrorNamingTheValue() throws Exception {
    String[][] cases = {
      {"main 0x16", "launch shape 'main 0x16': local size 0 is not positive"},
      {"main 16x16 global 100x16", "launch shape 'main 16x16 global 100x16': global size 100 is not a positive "
          + "multiple of local size 16"},
      {"other 16", "launch shape 'other 16': kernel 'other' is not among the requested kernels [main]"},
      {"main 1x1x1x1", "launch shape 'main 1x1x1x1': the local size needs 1 to 3 dimensions"},
      {"main 16 global 16x16", "launch shape 'main 16 global 16x16': the global size needs 1 dimension, as the "
          + "local size has"},
    };
    LaunchShape[] shapes = {
      LaunchShape.of("main", 0, 16),
      LaunchShape.of("main", 16, 16).withGlobalSize(100, 16),
      LaunchShape.of("other", 16),
      LaunchShape.of("main", 1, 1, 1, 1),
      LaunchShape.of("main", 16).withGlobalSize(16, 16),
    };
    for (int i = 0; i < shapes.length; i++) {
      LaunchShape shape = shapes[i];
      assertEquals(cases[i][0], shape.toString());
      List<RankResult> results = build(2, r -> new FakeBackend(),
          r -> KernelSource.of(SOURCE).withKernels("main").withLaunchShapes(shape), r -> 0);
      Throwable e = sameErrorEverywhere(results);
      assertInstanceOf(IllegalArgumentException.class, e);
      assertEquals(cases[i][1], e.getMessage());
    }
  }

  @Test
  void rootOutOfRangeFailsEveryRankWithoutUsingIt() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 10_000);
    List<RankResult> results = build(3, r -> new FakeBackend(), r -> KernelSource.of(SOURCE), r -> 7, world);
    Throwable e = sameErrorEverywhere(results);
    assertInstanceOf(IllegalArgumentException.class, e);
    assertTrue(e.getMessage().contains("root 7 is out of range"), e.getMessage());
    assertTrue(world.calls().stream().noneMatch(c -> c.operation().equals("broadcast")), "a broadcast was made");
  }

  @Test
  void badInputOnOneRankFailsEveryRankInsteadOfHanging() throws Exception {
    List<RankResult> results = build(3, r -> new FakeBackend(), r -> KernelSource.of(r == 1 ? "" : SOURCE), r -> 0);
    RequestMismatchException e = assertInstanceOf(RequestMismatchException.class, sameErrorEverywhere(results));
    assertTrue(e.getMessage().contains("rank 1 differs in source, validity (kernel source is empty"), e.getMessage());
  }

  @Test
  void sameBadInputEverywhereGivesTheSameIllegalArgument() throws Exception {
    List<RankResult> results = build(3, r -> new FakeBackend(), r -> KernelSource.of(SOURCE).withKernels("bad name"), r -> 0);
    Throwable e = sameErrorEverywhere(results);
    assertInstanceOf(IllegalArgumentException.class, e);
    assertEquals("kernel name 'bad name' is not a valid identifier", e.getMessage());
  }

  @Test
  void optionsTooLongToTravelAreRefusedOnEveryRankBeforeTheCompile() throws Exception {
    String options = "-DX=1 ".repeat(200_000);
    List<RankResult> results = build(2, r -> new FakeBackend(), r -> KernelSource.of(SOURCE).withOptions(options), r -> 0);
    Throwable e = sameErrorEverywhere(results);
    assertInstanceOf(IllegalArgumentException.class, e);
    assertTrue(e.getMessage().startsWith("build options of 1200000 characters exceed the limit of 1048576"),
        e.getMessage());
  }

  @Test
  void loadFailureOnOneRankFailsEveryRankNamingIt() throws Exception {
    List<RankResult> results = build(4, r -> {
      FakeBackend b = new FakeBackend();
      if (r == 3) {
        b.loadFailure = new IllegalStateException("clBuildProgram from binary failed: CL_INVALID_BINARY");
      }
      return b;
    }, r -> KernelSource.of(SOURCE), r -> 0);
    KernelLoadException e = assertInstanceOf(KernelLoadException.class, sameErrorEverywhere(results));
    assertEquals(List.of(3), List.copyOf(e.failures().keySet()));
    assertTrue(e.failures().get(3).contains("CL_INVALID_BINARY"));
  }

  @Test
  void ranksWithDifferentTargetsEachGetTheirOwnTargetsBinaryFromOneCompilePerTarget() throws Exception {
    String[] targets = {"cpu-a", "cpu-b", "cpu-a", "cpu-b", "cpu-c"};
    List<FakeBackend> backends = new ArrayList<>();
    for (String t : targets) {
      FakeBackend b = new FakeBackend();
      b.target = t;
      b.targetInBinary = true;
      backends.add(b);
    }
    InProcessCommunicator.World world = new InProcessCommunicator.World(targets.length, 10_000);
    List<RankResult> results = build(targets.length, backends::get, r -> KernelSource.of(SOURCE), r -> 2, world);
    for (int r = 0; r < targets.length; r++) {
      Outcome o = results.get(r).outcome();
      assertNotNull(o, "rank " + r + " failed: " + results.get(r).error());
      assertEquals(targets[r], o.envelope().metadata().target(), "rank " + r + " got another target's binary");
      assertTrue(FakeBackend.sameBinary(o.program(), targets[r] + SOURCE, 1000), "rank " + r + " binary");
    }
    // One compile per target, each on a different rank: the root for its own group, the lowest rank elsewhere.
    int[] expected = {0, 1, 1, 0, 1};
    for (int r = 0; r < targets.length; r++) {
      assertEquals(expected[r], backends.get(r).compiles.get(), "compiles on rank " + r);
      assertEquals(expected[r], results.get(r).outcome().stats().compiled() ? 1 : 0, "stats on rank " + r);
    }
    assertEquals(2, results.get(0).outcome().stats().root(), "rank 0's binary was built on the root");
    assertEquals(1, results.get(3).outcome().stats().root(), "rank 3's binary was built on rank 1");
    // Each group received only its own binary: no broadcast spans two groups.
    long splits = world.calls().stream().filter(c -> c.operation().equals("split")).count();
    assertEquals(targets.length, splits, "one split per rank");
  }

  @Test
  void aCompileFailureOfOneTargetGroupFailsEveryRankWithItsLog() throws Exception {
    List<RankResult> results = build(4, r -> {
      FakeBackend b = new FakeBackend();
      b.target = r % 2 == 0 ? "cpu-a" : "cpu-b";
      b.failOnTarget = "cpu-b";
      return b;
    }, r -> KernelSource.of(SOURCE), r -> 0);
    CompileException e = assertInstanceOf(CompileException.class, sameErrorEverywhere(results));
    assertTrue(e.getMessage().contains("for target [cpu-b]") && e.getMessage().contains("root 1"), e.getMessage());
    assertTrue(e.buildLog().contains("syntax error here"), e.buildLog());
  }

  @Test
  void payloadCorruptedInTransitIsNeverLoaded() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 10_000);
    List<FakeBackend> backends = List.of(new FakeBackend(), new FakeBackend(), new FakeBackend());
    List<RankResult> results = onRanks(world, 3, backends::get, (rank, comm, backend) -> {
      Communicator c = rank == 2 ? new CorruptingCommunicator(comm, 3) : comm;
      return new CollectiveBuild(c, backend, SETTINGS).run(KernelSource.of(SOURCE), 0);
    });
    KernelLoadException e = assertInstanceOf(KernelLoadException.class, sameErrorEverywhere(results));
    assertTrue(e.failures().get(2).contains("CRC32C"), e.getMessage());
    assertEquals(0, backends.get(2).loads.get(), "the corrupt binary reached the backend");
  }

  /** A binary of several pieces and check blocks: whichever piece a bad link flips, no rank loads it. */
  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(ints = {2, 3, 4})
  void corruptionInAnyPieceOfALargeBinaryIsCaughtBeforeLoading(int piece) throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 10_000);
    List<FakeBackend> backends = new ArrayList<>();
    for (int r = 0; r < 3; r++) {
      FakeBackend b = new FakeBackend();
      b.binaryBytes = 3 * Payload.CHECK_BLOCK_BYTES + 5;
      backends.add(b);
    }
    Settings settings = TestSettings.withChunkBytes(SETTINGS, Payload.CHECK_BLOCK_BYTES);
    List<RankResult> results = onRanks(world, 3, backends::get, (rank, comm, backend) -> {
      Communicator c = rank == 1 ? new CorruptingCommunicator(comm, piece) : comm;
      return new CollectiveBuild(c, backend, settings).run(KernelSource.of(SOURCE), 0);
    });
    KernelLoadException e = assertInstanceOf(KernelLoadException.class, sameErrorEverywhere(results));
    assertTrue(e.failures().get(1).contains("failed its CRC32C check"), e.getMessage());
    assertEquals(0, backends.get(1).loads.get(), "the corrupt binary reached the backend");
    assertEquals(1, backends.get(2).loads.get(), "the intact rank loaded its binary");
  }

  /** Only a loaded binary, which a kernel will own and release, lives in the reused receive buffer. */
  @Test
  void receiveBuffersAreLentOnlyToKernels() throws Exception {
    for (boolean load : new boolean[] {true, false}) {
      InProcessCommunicator.World world = new InProcessCommunicator.World(2, 10_000);
      List<RankResult> results = onRanks(world, 2, r -> new FakeBackend(),
          (rank, comm, backend) -> new CollectiveBuild(comm, backend, SETTINGS).run(KernelSource.of(SOURCE), 0, load));
      assertNull(results.get(1).error());
      assertEquals(load, results.get(1).outcome().envelope().payload().isLent(), "load " + load);
      assertEquals(false, results.get(1).outcome().envelope().detached().payload().isLent());
    }
  }

  @Test
  void aLargeBinaryArrivesIntactInPieces() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 10_000);
    int bytes = 3 * Payload.CHECK_BLOCK_BYTES + 5;
    Settings settings = TestSettings.withChunkBytes(SETTINGS, 700_000); // pieces that straddle check blocks
    List<RankResult> results = onRanks(world, 3, r -> {
      FakeBackend b = new FakeBackend();
      b.binaryBytes = bytes;
      return b;
    }, (rank, comm, backend) -> new CollectiveBuild(comm, backend, settings).run(KernelSource.of(SOURCE), 0));
    for (RankResult r : results) {
      assertNull(r.error());
      assertTrue(FakeBackend.sameBinary(r.outcome().program(), SOURCE, bytes));
    }
  }

  @Test
  void oversizedBinaryIsRefusedWithoutLosingStep() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 10_000);
    List<RankResult> results = onRanks(world, 2, r -> new FakeBackend(), (rank, comm, backend) ->
        new CollectiveBuild(comm, backend, TestSettings.withMaxBinaryBytes(SETTINGS, rank == 1 ? 999 : 1 << 20))
            .run(KernelSource.of(SOURCE), 0));
    KernelLoadException e = assertInstanceOf(KernelLoadException.class, sameErrorEverywhere(results));
    assertTrue(e.failures().get(1).contains("exceeds this rank's limit of 999"), e.getMessage());
  }
}
