package org.mpibuild.cuda;

import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static jcuda.driver.JCudaDriver.cuInit;

import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;
import org.mpibuild.BackendUnavailableException;
import org.mpibuild.spi.Placement;
import org.mpibuild.support.BackendSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds this rank's GPU: loads JCuda's driver binding and initializes the driver, once per process, counts the
 * node's GPUs and takes the one of this rank ({@link #ordinal}). What is missing is reported, not thrown: a
 * rank without a GPU can still build for named targets.
 */
final class DeviceProbe {
  private static final Logger log = LoggerFactory.getLogger(DeviceProbe.class);

  private static String driverProblem;
  private static boolean driverReady;

  private DeviceProbe() {}

  /**
   * What a probe found: this rank's GPU, or why there is none.
   *
   * @param device the GPU, its primary context retained; or null
   * @param problem why there is no GPU, or null
   */
  record Found(CudaDevice device, String problem) {}

  /**
   * Finds this rank's GPU.
   *
   * @param configured {@code MPI_BUILD_CUDA_DEVICE}, or null
   * @param placement this rank's rank among the ranks of its node, from the communicator
   * @return the GPU, or why there is none
   * @throws BackendUnavailableException if {@code MPI_BUILD_CUDA_DEVICE} names no GPU of the node
   */
  static Found probe(Integer configured, Placement placement) {
    String problem = loadDriver();
    if (problem != null) {
      return new Found(null, problem);
    }
    int[] count = new int[1];
    int rc = cuDeviceGetCount(count);
    if (rc != CUresult.CUDA_SUCCESS || count[0] == 0) {
      return new Found(null, "no CUDA device (cuDeviceGetCount: " + CUresult.stringFor(rc) + ", " + count[0]
          + " devices)");
    }
    return new Found(CudaDevice.open(ordinal(configured, placement, count[0])), null);
  }

  /**
   * The ordinal of this rank's GPU: {@code MPI_BUILD_CUDA_DEVICE} if set, else the rank's rank among the ranks
   * of its node modulo the node's GPUs, so that the ranks of a node spread over its GPUs.
   *
   * @param configured {@code MPI_BUILD_CUDA_DEVICE}, or null
   * @param placement this rank's rank among the ranks of its node, from the communicator
   * @param deviceCount the node's GPUs, at least 1
   * @return the ordinal
   * @throws BackendUnavailableException if {@code MPI_BUILD_CUDA_DEVICE} names no GPU of the node
   */
  static int ordinal(Integer configured, Placement placement, int deviceCount) {
    int ordinal = configured != null ? configured : placement.nodeRank() % deviceCount;
    if (ordinal < 0 || ordinal >= deviceCount) {
      throw new BackendUnavailableException("CUDA backend unavailable: MPI_BUILD_CUDA_DEVICE=" + ordinal
          + " but this node has " + deviceCount + " GPUs", null);
    }
    return ordinal;
  }

  /**
   * Loads JCuda's driver binding and initializes the driver, once per process (see {@link JCudaNatives}).
   *
   * @return why the driver cannot be used, or null
   */
  private static synchronized String loadDriver() {
    if (driverReady || driverProblem != null) {
      return driverProblem;
    }
    try {
      int[] initialized = new int[1];
      JCudaNatives.load(JCudaDriver.class, "JCudaDriver", () -> initialized[0] = cuInit(0));
      int rc = initialized[0];
      if (rc == CUresult.CUDA_ERROR_NO_DEVICE) {
        driverProblem = "no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)";
      } else if (rc != CUresult.CUDA_SUCCESS) {
        driverProblem = "cuInit failed: " + CUresult.stringFor(rc);
      } else {
        driverReady = true;
      }
    } catch (LinkageError | RuntimeException e) {
      driverProblem = "no CUDA driver (libcuda.so.1 cannot be loaded: " + BackendSupport.firstLine(e) + ")";
      log.debug("CUDA driver probe failed", e);
    }
    return driverProblem;
  }
}
