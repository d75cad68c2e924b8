package org.mpibuild.cuda;

import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.mpibuild.BackendUnavailableException;
import org.mpibuild.spi.Placement;
import org.mpibuild.spi.SettingSource;

/**
 * Which GPU a rank takes: its rank among its node's ranks (from the communicator) modulo the node's GPUs,
 * unless MPI_BUILD_CUDA_DEVICE names one. Runs without a GPU, but for the last test, which skips, saying why.
 */
class DeviceChoiceTest {

  static List<Integer> ordinals(int nodeSize, int deviceCount) {
    List<Integer> out = new ArrayList<>();
    for (int r = 0; r < nodeSize; r++) {
      out.add(DeviceProbe.ordinal(null, new Placement(r, nodeSize), deviceCount));
    }
    return out;
  }

  @Test
  void theRanksOfANodeSpreadOverItsGpus() {
    assertEquals(List.of(0, 1, 2, 3, 0, 1, 2, 3), ordinals(8, 4));
    assertEquals(List.of(0, 1, 0), ordinals(3, 2));
    assertEquals(List.of(0, 0, 0), ordinals(3, 1));
    assertEquals(0, DeviceProbe.ordinal(null, Placement.ALONE, 4), "a rank alone on its node takes GPU 0");
  }

  @Test
  void mpiBuildCudaDeviceWinsOverThePlacement() {
    assertEquals(2, DeviceProbe.ordinal(2, new Placement(3, 4), 4));
    assertEquals(0, DeviceProbe.ordinal(0, new Placement(1, 2), 2));
  }

  @Test
  void mpiBuildCudaDeviceBeyondTheNodesGpusKeepsItsMessage() {
    BackendUnavailableException e = assertThrows(BackendUnavailableException.class,
        () -> DeviceProbe.ordinal(4, new Placement(1, 2), 4));
    assertEquals("CUDA backend unavailable: MPI_BUILD_CUDA_DEVICE=4 but this node has 4 GPUs", e.getMessage());
  }

  /**
   * The core opens backends with the placement; a provider that did not take it would open every rank of a node
   * on GPU 0 (BackendProvider's defaults drop it), and one whose openAsDefault(settings) were the default would
   * open without a GPU for an automatic choice.
   */
  @Test
  void theProviderTakesThePlacement() throws NoSuchMethodException {
    for (String method : List.of("open", "openAsDefault")) {
      assertEquals(CudaBackendProvider.class, CudaBackendProvider.class
          .getMethod(method, SettingSource.class, Placement.class).getDeclaringClass(), method + "(settings, placement)");
      assertEquals(CudaBackendProvider.class, CudaBackendProvider.class
          .getMethod(method, SettingSource.class).getDeclaringClass(), method + "(settings)");
    }
  }

  @Test
  void aComputeCapabilityNamesItsArchitecture() {
    assertEquals("sm_90", CudaDevice.arch(9, 0));
    assertEquals("sm_86", CudaDevice.arch(8, 6));
    assertEquals("sm_100", CudaDevice.arch(10, 0));
  }

  @Test
  void onAGpuTheProbeOpensTheGpuOfTheNodeRank() {
    DeviceProbe.Found alone = DeviceProbe.probe(null, Placement.ALONE);
    if (alone.device() == null) {
      System.out.println("onAGpuTheProbeOpensTheGpuOfTheNodeRank skipped: no usable GPU (" + alone.problem() + ")");
    }
    Assumptions.assumeTrue(alone.device() != null, "no usable GPU: " + alone.problem());
    alone.device().release();
    assertEquals(0, alone.device().ordinal());
    int[] count = new int[1];
    CudaKernel.check(cuDeviceGetCount(count), "cuDeviceGetCount");
    for (int r = 0; r < 2 * count[0]; r++) {
      CudaDevice d = DeviceProbe.probe(null, new Placement(r, 2 * count[0])).device();
      d.release();
      assertEquals(r % count[0], d.ordinal(), "node rank " + r + " of " + 2 * count[0] + ", " + count[0] + " GPUs");
    }
  }
}
