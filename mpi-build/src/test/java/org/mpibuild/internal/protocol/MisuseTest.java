package org.mpibuild.internal.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.testkit.FakeBackend;
import org.mpibuild.testkit.InProcessCommunicator;

/** Documented misuse through the public API: a second thread on a busy instance, kernels used after close. */
class MisuseTest {
  static final KernelSource SAXPY = KernelSource.of("__kernel void saxpy() {}").withKernels("saxpy");

  /** What the second thread got, how long it took, and the first thread's kernel. */
  record Seen(Throwable build, Throwable statistics, Throwable close, long millis, Kernel first) {}

  @Test
  void aSecondThreadOnABusyInstanceIsRefusedAtOnceAndTheFirstCallSucceedsOnEveryRank() throws Exception {
    List<FakeBackend> backends = BatchAndAsyncTest.backends(2);
    backends.get(0).compileSleepMillis = 1_500; // the root's compile holds the first thread inside the build
    List<Object> results = BatchAndAsyncTest.onRanks(new InProcessCommunicator.World(2, 20_000), backends,
        (rank, b, backend) -> {
          if (rank != 0) {
            return b.mpiBuildKernel(SAXPY, 0);
          }
          ExecutorService first = Executors.newSingleThreadExecutor(r -> new Thread(r, "first-builder"));
          ExecutorService second = Executors.newSingleThreadExecutor(r -> new Thread(r, "second-builder"));
          try {
            Future<Kernel> kernel = first.submit(() -> b.mpiBuildKernel(SAXPY, 0));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (backend.compiles.get() == 0 && System.nanoTime() < deadline) {
              Thread.sleep(5); // until the first thread is compiling
            }
            long t0 = System.nanoTime();
            Future<Throwable[]> refused = second.submit(() -> new Throwable[] {
                thrown(() -> b.mpiBuildKernel(SAXPY, 0)), thrown(b::statistics), thrown(() -> {
                  b.close();
                  return null;
                })});
            Throwable[] t = refused.get(5, TimeUnit.SECONDS);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            return new Seen(t[0], t[1], t[2], ms, kernel.get(30, TimeUnit.SECONDS));
          } finally {
            first.shutdownNow();
            second.shutdownNow();
          }
        });
    Seen seen = assertInstanceOf(Seen.class, results.get(0), "rank 0: " + results.get(0));
    for (Throwable t : new Throwable[] {seen.build(), seen.statistics(), seen.close()}) {
      assertInstanceOf(IllegalStateException.class, t, String.valueOf(t));
      assertTrue(t.getMessage().contains("thread 'first-builder' is inside MpiBuild.mpiBuildKernel"), t.getMessage());
      assertTrue(t.getMessage().contains("on thread 'second-builder' refused"), t.getMessage());
    }
    assertTrue(seen.millis() < 1_000, "refused at once, not after the first call: " + seen.millis() + " ms");
    assertEquals(List.of("saxpy"), seen.first().kernelNames());
    Kernel other = assertInstanceOf(Kernel.class, results.get(1), "rank 1: " + results.get(1));
    assertEquals(List.of("saxpy"), other.kernelNames());
    assertEquals(1, backends.get(0).compiles.get() + backends.get(1).compiles.get(), "one compile in the job");
  }

  /**
   * Issue 44, item 3: two threads call one instance at once, and the ranks admit different threads first (rank 0
   * thread 'A', rank 1 thread 'B'). The two admitted calls differ; they fail on every rank with the same
   * message, which says that the ranks made the call on different threads and what that means, before what
   * differs; the refused call is refused at once. Before, the message spoke of sources and kernels only.
   */
  @Test
  void ranksThatAdmitDifferentThreadsFirstAreToldSoWithTheSameMessage() throws Exception {
    KernelSource a = KernelSource.of("__kernel void a() {}").withKernels("a");
    KernelSource b2 = KernelSource.of("__kernel void b() {}").withKernels("b");
    List<Object> results = BatchAndAsyncTest.onRanks(new InProcessCommunicator.World(2, 20_000),
        BatchAndAsyncTest.backends(2), (rank, b, backend) -> {
          ExecutorService threadA = Executors.newSingleThreadExecutor(r -> new Thread(r, "A"));
          ExecutorService threadB = Executors.newSingleThreadExecutor(r -> new Thread(r, "B"));
          try {
            if (rank == 1) {
              Thread.sleep(600); // rank 0's thread A is inside its call, and has refused B, by then
              return List.of(threadB.submit(() -> thrown(() -> b.mpiBuildKernel(b2, 0))).get(30, TimeUnit.SECONDS));
            }
            Future<Throwable> first = threadA.submit(() -> thrown(() -> b.mpiBuildKernel(a, 0)));
            Thread.sleep(200);
            Throwable second = threadB.submit(() -> thrown(() -> b.mpiBuildKernel(b2, 0))).get(5, TimeUnit.SECONDS);
            return List.of(first.get(30, TimeUnit.SECONDS), second);
          } finally {
            threadA.shutdownNow();
            threadB.shutdownNow();
          }
        });
    List<?> rank0 = assertInstanceOf(List.class, results.get(0), "rank 0: " + results.get(0));
    List<?> rank1 = assertInstanceOf(List.class, results.get(1), "rank 1: " + results.get(1));
    Throwable onA = assertInstanceOf(org.mpibuild.RequestMismatchException.class, rank0.get(0));
    Throwable onB = assertInstanceOf(org.mpibuild.RequestMismatchException.class, rank1.get(0));
    assertEquals(onA.getMessage(), onB.getMessage(), "the same message on every rank");
    assertTrue(onA.getMessage().startsWith("the ranks made this call on different threads: rank 0 on thread 'A' "
        + "(it refused 'B'), rank 1 on thread 'B'. One MpiBuild serves one thread at a time"), onA.getMessage());
    assertTrue(onA.getMessage().contains("differs in source"), onA.getMessage());
    Throwable refused = assertInstanceOf(IllegalStateException.class, rank0.get(1));
    assertTrue(refused.getMessage().contains("on thread 'B' refused: thread 'A' is inside MpiBuild.mpiBuildKernel"),
        refused.getMessage());
  }

  private static Throwable thrown(Supplier<?> call) {
    try {
      call.get();
      return null;
    } catch (Throwable e) {
      return e;
    }
  }

  private static MpiBuild single(FakeBackend backend) {
    return MpiBuild.builder().communicator(new InProcessCommunicator.World(1, 20_000).rank(0)).backend(backend)
        .noCache().build();
  }

  @Test
  void aKernelUsedAfterItsMpiBuildClosedThrowsNamingTheKernelAndTheOwner() {
    MpiBuild b = single(new FakeBackend());
    Kernel kernel = b.mpiBuildKernel(SAXPY, 0);
    b.close();
    String expected = "kernel saxpy: its MpiBuild was closed";
    assertEquals(expected, assertThrows(IllegalStateException.class, kernel::binaryData).getMessage());
    assertEquals(expected, assertThrows(IllegalStateException.class, () -> kernel.as(FakeBackend.Program.class))
        .getMessage());
    kernel.close(); // already closed by its MpiBuild: nothing happens, twice
    kernel.close();
    assertEquals(List.of("saxpy"), kernel.kernelNames(), "what is not a handle stays readable");
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> b.mpiBuildKernel(SAXPY, 0));
    assertEquals("MpiBuild.mpiBuildKernel: this MpiBuild was closed", e.getMessage());
    b.close(); // twice: nothing
  }

  @Test
  void aKernelClosedByItselfSaysSoAndTheInstanceGoesOn() {
    try (MpiBuild b = single(new FakeBackend())) {
      Kernel kernel = b.mpiBuildKernel(SAXPY, 0);
      kernel.close();
      kernel.close();
      assertEquals("kernel saxpy: it was closed",
          assertThrows(IllegalStateException.class, kernel::binaryData).getMessage());
      try (Kernel again = b.mpiBuildKernel(SAXPY, 0)) {
        assertEquals(List.of("saxpy"), again.binaryData().kernelNames());
      }
    }
  }

  @Test
  void theLibrarysOwnAsyncThreadDoesNotTripTheGuard() throws Exception {
    FakeBackend backend = new FakeBackend();
    backend.compileSleepMillis = 300;
    try (MpiBuild b = single(backend)) {
      var future = b.mpiBuildKernelAsync(SAXPY, 0); // built on the library's thread while this one goes on
      try (Kernel k = b.mpiBuildKernel(KernelSource.of("__kernel void other() {}").withKernels("other"), 0)) {
        assertEquals(List.of("other"), k.kernelNames());
      }
      try (Kernel k = future.join()) {
        assertEquals(List.of("saxpy"), k.kernelNames());
      }
      CompletableFuture.runAsync(b::progress).get(5, TimeUnit.SECONDS); // another thread, the instance idle: fine
    }
  }
}
