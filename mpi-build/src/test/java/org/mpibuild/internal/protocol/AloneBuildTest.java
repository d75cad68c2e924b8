package org.mpibuild.internal.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.testkit.FakeBackend;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * A job of one rank gets its program as soon as it is built and its binary later, for the cache
 * ({@code Backend.compileAlone}): the cache fills before close returns, a binary that cannot be made costs
 * nothing but the entry, and without a cache no binary is made until one is asked for.
 */
class AloneBuildTest {
  private static final String SOURCE = "__kernel void k(__global float* x) { x[0] = 1; }";

  private static MpiBuild local(FakeBackend backend, Path cache) {
    return MpiBuild.builder().local().backend(backend).cacheDirectory(cache).build();
  }

  private static long entries(Path cache) throws Exception {
    if (!Files.isDirectory(cache)) {
      return 0;
    }
    try (Stream<Path> files = Files.walk(cache)) {
      return files.filter(f -> f.getFileName().toString().endsWith(".kbin")).count();
    }
  }

  private static long locks(Path cache) throws Exception {
    try (Stream<Path> files = Files.walk(cache)) {
      return files.filter(f -> f.getFileName().toString().endsWith(".lock")).count();
    }
  }

  @Test
  void theKernelIsReadyBeforeItsBinaryAndTheCacheFillsBeforeCloseReturns(@TempDir Path cache) throws Exception {
    FakeBackend backend = new FakeBackend();
    backend.binaryGate = new CompletableFuture<>();
    MpiBuild b = local(backend, cache);
    Kernel k = b.mpiBuildKernel(SOURCE, 0);
    assertEquals(1, backend.aloneCompiles.get(), "a job of one rank compiles alone");
    assertEquals(0, entries(cache), "no entry before the binary is made");
    assertEquals(0, k.stats().binaryBytes());
    CompletableFuture.runAsync(() -> {
      sleep(200);
      backend.binaryGate.complete(null);
    });
    b.close(); // waits for the fill
    assertEquals(1, entries(cache), "close returns once the binary is in the cache");
    assertEquals(0, locks(cache), "and the entry's lock is released");

    FakeBackend second = new FakeBackend();
    try (MpiBuild again = local(second, cache); Kernel warm = again.mpiBuildKernel(SOURCE, 0)) {
      assertTrue(warm.stats().cacheHit(), "the next job finds the binary");
      assertEquals(0, second.compiles.get());
      assertArrayEquals(FakeBackend.binaryFor(SOURCE, 1000), warm.binaryData().binary());
    }
  }

  /**
   * A binary made when wanted: nothing runs it while the kernel is open, the entry's lock is not held meanwhile (a
   * job of one rank that ends hours later would hold every other job of the request on it), and the kernel's
   * close, or MpiBuild's, makes it before close returns: the cache fills.
   */
  @Test
  void aBinaryMadeWhenWantedHoldsNoLockAndIsMadeAtTheKernelsClose(@TempDir Path cache) throws Exception {
    FakeBackend backend = new FakeBackend();
    backend.binaryGate = CompletableFuture.completedFuture(null);
    backend.binaryWhenWanted = true;
    MpiBuild b = local(backend, cache);
    Kernel k = b.mpiBuildKernel(SOURCE, 0);
    sleep(200);
    assertEquals(0, backend.whenWantedRuns.get(), "nobody ran it while the kernel is open");
    assertEquals(0, locks(cache), "no lock held meanwhile");
    assertEquals(0, entries(cache));
    b.close(); // closes the kernel first, which makes the binary, then waits for the entry
    assertEquals(1, backend.whenWantedRuns.get());
    assertEquals(1, entries(cache), "close returns once the binary is in the cache");
    FakeBackend second = new FakeBackend();
    try (MpiBuild again = local(second, cache); Kernel warm = again.mpiBuildKernel(SOURCE, 0)) {
      assertTrue(warm.stats().cacheHit(), "the next job finds the binary");
      assertArrayEquals(FakeBackend.binaryFor(SOURCE, 1000), warm.binaryData().binary());
    }
    try (MpiBuild third = local(backend, cache.resolve("other"))) {
      try (Kernel open = third.mpiBuildKernel(SOURCE, 0)) {
        assertArrayEquals(FakeBackend.binaryFor(SOURCE, 1000), open.binaryData().binary(), "binaryData makes it");
        assertEquals(2, backend.whenWantedRuns.get());
      }
      assertEquals(2, backend.whenWantedRuns.get(), "made once");
    }
    assertEquals(1, entries(cache.resolve("other")));
  }

  @Test
  void binaryDataWaitsForTheBinary(@TempDir Path cache) {
    FakeBackend backend = new FakeBackend();
    backend.binaryGate = new CompletableFuture<>();
    try (MpiBuild b = local(backend, cache); Kernel k = b.mpiBuildKernel(SOURCE, 0)) {
      CompletableFuture.runAsync(() -> {
        sleep(100);
        backend.binaryGate.complete(null);
      });
      assertArrayEquals(FakeBackend.binaryFor(SOURCE, 1000), k.binaryData().binary());
    }
  }

  @Test
  void aBinaryThatCannotBeMadeLeavesNoEntryAndTheKernelStillRuns(@TempDir Path cache) throws Exception {
    FakeBackend backend = new FakeBackend();
    backend.binaryGate = CompletableFuture.failedFuture(new IllegalStateException("the compile process died (test)"));
    try (MpiBuild b = local(backend, cache); Kernel k = b.mpiBuildKernel(SOURCE, 0)) {
      assertEquals(List.of("main"), k.kernelNames());
    }
    assertEquals(0, entries(cache), "nothing cached");
    assertEquals(0, locks(cache), "the entry's lock is released");
    try (MpiBuild b = local(backend, cache); Kernel k = b.mpiBuildKernel(SOURCE, 0)) {
      assertEquals(2, backend.compiles.get());
      assertArrayEquals(FakeBackend.binaryFor(SOURCE, 1000), k.binaryData().binary(), "made by a compile instead");
      assertEquals(3, backend.compiles.get());
    }
  }

  @Test
  void binaryDataIsACallOfTheInstance(@TempDir Path cache) {
    FakeBackend backend = new FakeBackend();
    backend.binaryGate = new CompletableFuture<>();
    MpiBuild b = local(backend, cache);
    Kernel k = b.mpiBuildKernel(SOURCE, 0);
    backend.binaryGate.complete(null);
    b.close();
    IllegalStateException e = assertThrows(IllegalStateException.class, k::binaryData);
    assertTrue(e.getMessage().contains("closed"), e.getMessage());
  }

  @Test
  void withoutACacheNoBinaryIsMadeUntilOneIsAskedFor() {
    FakeBackend backend = new FakeBackend();
    backend.binaryGate = new CompletableFuture<>(); // never completes: no binary may wait for it
    try (MpiBuild b = MpiBuild.builder().local().backend(backend).noCache().build();
        Kernel k = b.mpiBuildKernel(SOURCE, 0)) {
      assertEquals(1, backend.withoutBinary.get(), "nothing keeps a binary: none is made");
      assertEquals(1, backend.compiles.get());
      assertArrayEquals(FakeBackend.binaryFor(SOURCE, 1000), k.binaryData().binary(), "made when asked for");
      assertEquals(2, backend.compiles.get());
      k.binaryData();
      assertEquals(2, backend.compiles.get(), "and kept");
    }
  }

  @Test
  void aReadOnlyCacheKeepsNoBinarySoNoneIsMade(@TempDir Path cache) {
    FakeBackend backend = new FakeBackend();
    backend.binaryGate = new CompletableFuture<>(); // never completes: no binary may wait for it
    try (MpiBuild b = MpiBuild.builder().local().backend(backend).cacheDirectory(cache)
        .set("MPI_BUILD_CACHE", "read-only").build(); Kernel k = b.mpiBuildKernel(SOURCE, 0)) {
      assertEquals(1, backend.withoutBinary.get(), "a read-only cache keeps nothing: no binary is made");
    }
  }

  @Test
  void ranksThatReceiveTheBinaryNeverCompileAlone() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 10_000);
    List<FakeBackend> backends = List.of(new FakeBackend(), new FakeBackend());
    backends.forEach(f -> f.binaryGate = new CompletableFuture<>());
    List<CollectiveBuildTest.RankResult> results = CollectiveBuildTest.onRanks(world, 2, backends::get,
        (rank, comm, backend) -> new CollectiveBuild(comm, backend, CollectiveBuildTest.SETTINGS)
            .run(KernelSource.of(SOURCE), 0));
    for (CollectiveBuildTest.RankResult r : results) {
      assertEquals(null, r.error());
      assertFalse(r.outcome().envelope().isPending());
    }
    assertEquals(0, backends.get(0).aloneCompiles.get());
    assertEquals(1, backends.get(0).compiles.get());
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
