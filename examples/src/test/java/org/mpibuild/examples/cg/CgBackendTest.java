package org.mpibuild.examples.cg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.mpibuild.KernelLoadException;
import org.mpibuild.KernelSource;
import org.mpibuild.spi.Communicator;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * {@code --backend}: the option, the request each backend builds, and, on a machine without a GPU, a clean
 * refusal of CUDA that says why, before the solver touches a device. On a machine with one, the same call solves.
 */
class CgBackendTest {
  private static Communicator oneRank() {
    return new InProcessCommunicator.World(1, 30_000).rank(0);
  }

  @Test
  void theBackendIsOpenClUnlessCudaIsNamed() {
    assertEquals("opencl", Cg.Options.parse(new String[0]).backend());
    Cg.Options cuda = Cg.Options.parse(new String[] {"--backend", "cuda", "--mode", "ordered,manual", "--verify"});
    assertEquals("cuda", cuda.backend());
    assertEquals(List.of("ordered", "manual"), cuda.modes());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Cg.Options.parse(new String[] {"--backend", "vulkan"}));
    assertEquals("--backend is opencl or cuda, not 'vulkan'", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Cg.Options.parse(new String[] {"--backend"}));
    assertEquals("option --backend needs a value, or is unknown", e.getMessage());
  }

  /** A warm-up may be longer than the timed solve (the JIT needs thousands of iterations), never negative. */
  @Test
  void theWarmUpIsItsOwnLength() {
    assertEquals(2000, Cg.Options.parse(new String[] {"--warmup", "2000", "--max-iterations", "41"}).warmup());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Cg.Options.parse(new String[] {"--warmup", "-1"}));
    assertEquals("--warmup -1 must be between 0 and 1000000", e.getMessage());
  }

  @Test
  void cudaBuildsTheCudaSourceWithoutLaunchShapesAndOpenClNamesThemForACollectiveBuild() {
    KernelSource cuda = Cg.request(Cg.Options.parse(new String[] {"--backend", "cuda"}));
    assertEquals(CgKernels.CUDA_SOURCE, cuda.source());
    assertEquals(CgKernels.KERNELS, cuda.kernelNames());
    assertTrue(cuda.launchShapes().isEmpty(), cuda.launchShapes().toString());
    KernelSource openCl = Cg.request(Cg.Options.parse(new String[0]));
    assertEquals(CgKernels.SOURCE, openCl.source());
    assertEquals(CgKernels.KERNELS.size(), openCl.launchShapes().size());
    assertTrue(Cg.request(Cg.Options.parse(new String[] {"--build", "each-rank"})).launchShapes().isEmpty());
  }

  @Test
  void withoutAGpuCudaIsRefusedNamingTheOptionTheRankAndWhy() {
    Cg.Options o = Cg.Options.parse(new String[] {"--backend", "cuda", "--build", "each-rank", "--n", "12",
        "--verify"});
    try {
      boolean ok = Cg.run(oneRank(), o);
      System.out.println("CgBackendTest: this machine has a usable GPU; the solve ran there");
      assertTrue(ok, "the solve on the GPU matches the host's");
    } catch (Cg.CannotRun e) {
      assertTrue(e.getMessage().startsWith("--backend cuda cannot run: "), e.getMessage());
      assertTrue(e.getMessage().contains("rank 0: CUDA backend unavailable: "), e.getMessage());
    }
  }

  @Test
  void aCudaBinaryThatCannotBeLoadedIsRefusedToo() {
    String before = System.getProperty("mpibuild.cuda.arch");
    // nvcc builds for a named architecture without a GPU; no driver, or a GPU of another architecture, cannot load it
    System.setProperty("mpibuild.cuda.arch", "sm_75");
    try {
      Cg.CannotRun e = assertThrows(Cg.CannotRun.class,
          () -> Cg.run(oneRank(), Cg.Options.parse(new String[] {"--backend", "cuda", "--build", "each-rank"})));
      assertTrue(e.getMessage().startsWith("--backend cuda cannot run: "), e.getMessage());
      if (e.getCause() instanceof KernelLoadException) {
        assertTrue(e.getMessage().contains("cannot load it"), e.getMessage());
      } else { // no CUDA compiler here: the backend could not open at all
        assertTrue(e.getMessage().contains("CUDA backend unavailable: "), e.getMessage());
      }
    } finally {
      if (before == null) {
        System.clearProperty("mpibuild.cuda.arch");
      } else {
        System.setProperty("mpibuild.cuda.arch", before);
      }
    }
  }
}
