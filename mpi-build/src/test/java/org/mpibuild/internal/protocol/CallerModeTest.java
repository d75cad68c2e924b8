package org.mpibuild.internal.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.mpibuild.KernelFuture;
import org.mpibuild.KernelSource;
import org.mpibuild.internal.agreement.SettingsAgreementTest;
import org.mpibuild.spi.Communicator;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * Asynchronous builds in caller mode (MPI below MULTIPLE): every MPI call on the program's thread, and the
 * collective deadline as for a blocking build.
 */
class CallerModeTest {
  /**
   * The in-process communicator fails and records any MPI call from a thread other than the rank's own:
   * the arrival messages, the collectives and the tests of their requests all stay on the caller's thread.
   */
  @Test
  void underFunneledEveryMpiCallIsMadeOnTheCallersThread() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 20_000)
        .threadLevel(Communicator.ThreadLevel.FUNNELED);
    List<Object> results = BatchAndAsyncTest.onRanks(world, BatchAndAsyncTest.backends(3), (rank, b, backend) -> {
      KernelFuture one = b.mpiBuildKernelAsync(KernelSource.of("__kernel void k() {}").withKernels("k"), 0);
      KernelFuture two = b.mpiBuildKernelAsync(KernelSource.of("__kernel void j() {}").withKernels("j"), 1);
      assertEquals("caller", b.asyncProgress());
      return one.join().kernelNames().get(0) + two.join().kernelNames().get(0);
    });
    assertEquals(List.of("kj", "kj", "kj"), results);
    assertEquals(List.of(), world.threadViolations());
  }

  /**
   * A rank that never starts an asynchronous build: in caller mode, the ranks that did are no longer left
   * waiting for ever; at the deadline rank 0 ends the job, naming the rank that never came.
   */
  @Test
  void aRankThatNeverStartsTheAsyncBuildEndsTheOthersWaitAtTheDeadlineNamingIt() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 20_000)
        .threadLevel(Communicator.ThreadLevel.FUNNELED);
    List<Object> results = SettingsAgreementTest.onRanks(world, Map.of("MPI_BUILD_COLLECTIVE_TIMEOUT", "1"),
        (rank, b) -> {
          if (rank == 1) {
            Thread.sleep(2_500); // computes, and never starts the build
            return "absent";
          }
          long t0 = System.nanoTime();
          KernelFuture f = b.mpiBuildKernelAsync(KernelSource.of("__kernel void k() {}").withKernels("k"), 0);
          try {
            f.join();
            return "built";
          } catch (IllegalStateException e) {
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms >= 1000 && ms < 2_400, "ended after " + ms + " ms, deadline 1 s");
            return e.getMessage();
          }
        });
    assertEquals("absent", results.get(1));
    String message = assertInstanceOf(String.class, results.get(0));
    assertTrue(message.contains("ranks [1] of 2 did not enter the build of [k]")
        && message.contains("MPI_BUILD_COLLECTIVE_TIMEOUT"), message);
    assertEquals(message, "aborted with code 4: " + world.abortMessage());
    assertEquals(List.of(), world.threadViolations(), "the abort too is made on the caller's thread");
  }

  /**
   * Issue 44: a rank that started an asynchronous build and then computes past the deadline without touching
   * the library has entered the build; its arrival went out when it started the build, so nobody aborts, and
   * the build completes when it comes back. Before, rank 0 named it as "did not enter" and aborted the job.
   */
  @Test
  void aRankThatStartedTheAsyncBuildAndComputesPastTheDeadlineHasEnteredIt() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 20_000)
        .threadLevel(Communicator.ThreadLevel.FUNNELED);
    List<Object> results = SettingsAgreementTest.onRanks(world, Map.of("MPI_BUILD_COLLECTIVE_TIMEOUT", "1"),
        (rank, b) -> {
          KernelFuture f = b.mpiBuildKernelAsync(KernelSource.of("__kernel void k() {}").withKernels("k"), 0);
          if (rank == 1) {
            Thread.sleep(2_500); // computes for more than twice the deadline, touching nothing of the library
          }
          return f.join().kernelNames().get(0);
        });
    assertEquals(List.of("k", "k", "k"), results);
    assertEquals(null, world.abortMessage());
    assertEquals(List.of(), world.threadViolations(), "the early arrival is sent on the caller's thread");
  }

  /**
   * Where rank 0 never starts the build, the others, which cannot hear from it, end their wait after the
   * deadline and its grace period, naming rank 0.
   */
  @Test
  void aRootThatNeverStartsTheAsyncBuildIsNamedByTheOthers() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 30_000)
        .threadLevel(Communicator.ThreadLevel.FUNNELED);
    List<Object> results = SettingsAgreementTest.onRanks(world, Map.of("MPI_BUILD_COLLECTIVE_TIMEOUT", "1"),
        (rank, b) -> {
          if (rank == 0) {
            Thread.sleep(8_000); // computes, and never starts the build
            return "absent";
          }
          KernelFuture f = b.mpiBuildKernelAsync(KernelSource.of("__kernel void k() {}").withKernels("k"), 1);
          try {
            f.join();
            return "built";
          } catch (IllegalStateException e) {
            return e.getMessage();
          }
        });
    String message = assertInstanceOf(String.class, results.get(1));
    assertTrue(message.contains("rank 1: rank 0 did not enter the build of [k] within 1 s"), message);
  }
}
