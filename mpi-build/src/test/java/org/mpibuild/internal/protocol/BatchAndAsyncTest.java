package org.mpibuild.internal.protocol;

import org.mpibuild.testkit.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.mpibuild.CompileException;
import org.mpibuild.KernelFuture;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.PrecompileResult;
import org.mpibuild.RequestMismatchException;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.spi.Communicator;
import org.mpibuild.testkit.InProcessCommunicator;

/** Batch and asynchronous builds through the public API, several ranks in one JVM. */
class BatchAndAsyncTest {
  interface Body<T> {
    T run(int rank, MpiBuild build, FakeBackend backend) throws Exception;
  }

  /** Runs {@code body} on every rank with its own MpiBuild; returns each rank's value or exception. */
  static <T> List<Object> onRanks(InProcessCommunicator.World world, List<FakeBackend> backends, Body<T> body)
      throws Exception {
    return onRanks(world, backends, 0, body);
  }

  static <T> List<Object> onRanks(InProcessCommunicator.World world, List<FakeBackend> backends, int batchRanks,
      Body<T> body) throws Exception {
    int size = backends.size();
    ExecutorService pool = Executors.newFixedThreadPool(size);
    try {
      List<Future<T>> futures = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        int rank = r;
        futures.add(pool.submit(() -> {
          try (MpiBuild b = MpiBuild.builder().communicator(world.rank(rank)).backend(backends.get(rank)).noCache()
              .batchRanks(batchRanks).build()) {
            return body.run(rank, b, backends.get(rank));
          }
        }));
      }
      List<Object> out = new ArrayList<>();
      for (Future<T> f : futures) {
        try {
          out.add(f.get(60, TimeUnit.SECONDS));
        } catch (ExecutionException e) {
          out.add(e.getCause());
        }
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  static List<FakeBackend> backends(int size) {
    List<FakeBackend> out = new ArrayList<>();
    for (int r = 0; r < size; r++) {
      out.add(new FakeBackend());
    }
    return out;
  }

  static List<KernelSource> requests(int k) {
    List<KernelSource> out = new ArrayList<>();
    for (int i = 0; i < k; i++) {
      out.add(KernelSource.of("__kernel void k" + i + "() {}" + " ".repeat(i * 500)).withKernels("k" + i));
    }
    return out;
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2, 4})
  void batchGivesEveryRankEveryKernelWithEachCompileOnce(int size) throws Exception {
    List<FakeBackend> backends = backends(size);
    List<KernelSource> requests = requests(9);
    // each kernel's program is read while its MpiBuild is open: closing the MpiBuild closes its kernels
    List<Object> results = onRanks(new InProcessCommunicator.World(size, 20_000), backends,
        (rank, b, backend) -> b.mpiBuildKernels(requests).stream()
            .map(k -> k.kernelNames() + " " + FakeBackend.sameBinary(k.as(FakeBackend.Program.class),
                requests.get(Integer.parseInt(k.kernelNames().get(0).substring(1))).source(), 1000)).toList());
    for (int r = 0; r < size; r++) {
      assertInstanceOf(List.class, results.get(r), "rank " + r + ": " + results.get(r));
      @SuppressWarnings("unchecked")
      List<String> kernels = (List<String>) results.get(r);
      assertEquals(9, kernels.size());
      for (int i = 0; i < 9; i++) {
        assertEquals("[k" + i + "] true", kernels.get(i), "rank " + r + " kernel " + i);
      }
    }
    int total = backends.stream().mapToInt(b -> b.compiles.get()).sum();
    assertEquals(9, total, "each request compiled once in the job");
    long compilingRanks = backends.stream().filter(b -> b.compiles.get() > 0).count();
    assertEquals(Math.min(size, 9), compilingRanks, "the compiles are spread over every rank");
  }

  @Test
  void batchRanksLimitsWhoCompiles() throws Exception {
    List<FakeBackend> backends = backends(4);
    List<Object> results = onRanks(new InProcessCommunicator.World(4, 20_000), backends, 2,
        (rank, b, backend) -> b.mpiBuildKernels(requests(8)).size());
    assertEquals(List.of(8, 8, 8, 8), results);
    int[] compiles = backends.stream().mapToInt(b -> b.compiles.get()).toArray();
    assertEquals(List.of(4, 0, 4, 0), java.util.Arrays.stream(compiles).boxed().toList(), "ranks 0 and 2 compile");
    BatchPlan plan = BatchPlan.of(requests(8), 4, 2);
    for (int owner : plan.owners()) {
      assertTrue(owner == 0 || owner == 2, "owners spread over the 2 compiling ranks: " + owner);
    }
  }

  @Test
  void planBalancesByCost() {
    List<KernelSource> r = new ArrayList<>();
    r.add(KernelSource.of("x".repeat(100_000)));
    for (int i = 0; i < 10; i++) {
      r.add(KernelSource.of("y".repeat(10_000)));
    }
    BatchPlan plan = BatchPlan.of(r, 2, 0);
    int big = plan.owners()[0];
    long withBig = 0;
    for (int i = 1; i < r.size(); i++) {
      withBig += plan.owners()[i] == big ? 1 : 0;
    }
    assertTrue(withBig <= 2, "the rank with the big compile gets few others: " + withBig);
  }

  @Test
  void aFailedRequestFailsTheBatchOnEveryRankAndPrecompileReportsIt() throws Exception {
    List<KernelSource> requests = new ArrayList<>(requests(5));
    requests.set(3, KernelSource.of("__kernel void k3() { syntax error }"));
    List<Object> thrown = onRanks(new InProcessCommunicator.World(3, 20_000), backends(3),
        (rank, b, backend) -> b.mpiBuildKernels(requests));
    for (Object o : thrown) {
      CompileException e = assertInstanceOf(CompileException.class, o);
      assertTrue(e.getMessage().contains("fake compiler failed"), e.getMessage());
      assertEquals(((Throwable) thrown.get(0)).getMessage(), e.getMessage());
    }
    List<Object> reports = onRanks(new InProcessCommunicator.World(3, 20_000), backends(3),
        (rank, b, backend) -> b.precompile(requests, null));
    for (Object o : reports) {
      @SuppressWarnings("unchecked")
      List<PrecompileResult> report = (List<PrecompileResult>) o;
      for (PrecompileResult p : report) {
        assertEquals(p.index() == 3 ? PrecompileResult.Outcome.FAILED : PrecompileResult.Outcome.COMPILED,
            p.outcome(), "entry " + p.index());
      }
      assertTrue(report.get(3).buildLog().contains("syntax error here"));
    }
  }

  @Test
  void ranksPassingDifferentBatchesAllThrowMismatch() throws Exception {
    List<Object> results = onRanks(new InProcessCommunicator.World(3, 20_000), backends(3),
        (rank, b, backend) -> b.mpiBuildKernels(requests(rank == 2 ? 4 : 5)));
    for (Object o : results) {
      RequestMismatchException e = assertInstanceOf(RequestMismatchException.class, o);
      assertTrue(e.getMessage().contains("rank 2"), e.getMessage());
    }
  }

  @Test
  void aBatchAndASingleBuildNeverAgree() throws Exception {
    List<Object> results = onRanks(new InProcessCommunicator.World(2, 20_000), backends(2),
        (rank, b, backend) -> rank == 0 ? b.mpiBuildKernels(requests(1)) : b.mpiBuildKernel(requests(1).get(0), 0));
    for (Object o : results) {
      assertInstanceOf(RequestMismatchException.class, o);
    }
  }

  @ParameterizedTest
  @EnumSource(Communicator.ThreadLevel.class)
  void asyncBuildsOverlapTheCallerAndCompleteInAnyOrder(Communicator.ThreadLevel level) throws Exception {
    List<FakeBackend> backends = backends(3);
    backends.get(0).compileSleepMillis = 300;
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 20_000).threadLevel(level);
    List<Object> results = onRanks(world, backends, (rank, b, backend) -> {
      List<KernelSource> requests = requests(3);
      List<KernelFuture> futures = new ArrayList<>();
      long t0 = System.nanoTime();
      for (KernelSource r : requests) {
        futures.add(b.mpiBuildKernelAsync(r, 0));
      }
      long submitted = System.nanoTime() - t0;
      assertTrue(submitted < TimeUnit.MILLISECONDS.toNanos(250), "submitting returned at once: " + submitted / 1e6 + " ms");
      String mode = b.asyncProgress();
      assertEquals(level == Communicator.ThreadLevel.MULTIPLE ? "thread" : "caller", mode);
      // "Compute" while the root compiles, touching the library only through progress().
      long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(400);
      while (System.nanoTime() < until) {
        b.progress();
        Thread.sleep(1);
      }
      List<String> names = new ArrayList<>();
      for (int i = futures.size() - 1; i >= 0; i--) {
        names.add(futures.get(i).join().kernelNames().get(0));
      }
      assertEquals(List.of("k2", "k1", "k0"), names);
      assertFalse(java.util.concurrent.Future.class.isAssignableFrom(KernelFuture.class), "a collective build cannot be cancelled");
      return b.statistics().compiles();
    });
    for (int r = 0; r < 3; r++) {
      assertEquals(3L, results.get(r), "rank " + r + ": " + results.get(r));
    }
    assertEquals(3, backends.get(0).compiles.get());
  }

  @Test
  void asyncFailuresReachEveryRanksFuture() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 20_000)
        .threadLevel(Communicator.ThreadLevel.FUNNELED);
    List<Object> results = onRanks(world, backends(2), (rank, b, backend) -> {
      KernelFuture bad = b.mpiBuildKernelAsync("__kernel void k() { syntax error }", 0);
      KernelFuture good = b.mpiBuildKernelAsync("__kernel void k() {}", 1);
      assertNotNull(good.join());
      return assertThrows(RuntimeException.class, bad::join);
    });
    for (Object o : results) {
      assertInstanceOf(CompileException.class, o);
    }
  }

  @Test
  void threadProgressNeedsMultiple() {
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> AsyncBuilds.chooseMode(Communicator.ThreadLevel.FUNNELED, Settings.Progress.THREAD));
    assertTrue(e.getMessage().contains("MPI_THREAD_FUNNELED"), e.getMessage());
  }
}
