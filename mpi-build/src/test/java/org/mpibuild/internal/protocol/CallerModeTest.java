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
}
