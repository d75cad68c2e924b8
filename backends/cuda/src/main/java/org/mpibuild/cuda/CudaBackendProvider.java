package org.mpibuild.cuda;

import java.util.List;
import java.util.ServiceLoader;
import org.mpibuild.BackendUnavailableException;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.BackendProvider;
import org.mpibuild.spi.Placement;
import org.mpibuild.spi.Setting;
import org.mpibuild.spi.SettingSource;

/**
 * Opens the CUDA backend. Found by the core through {@link ServiceLoader}; preferred over
 * OpenCL when a GPU is usable.
 *
 * <p>Settings (environment variable, or system property):
 * <ul>
 *   <li>{@code MPI_BUILD_CUDA_ARCH} ({@code mpibuild.cuda.arch}): build for these architectures, for
 *       example {@code sm_80,sm_90}, instead of those of the job's GPUs; works without a GPU;
 *   <li>{@code MPI_BUILD_CUDA_COMPILERS} ({@code mpibuild.cuda.compilers}): order of preference,
 *       default {@code nvrtc,nvcc};
 *   <li>{@code MPI_BUILD_NVCC} ({@code mpibuild.cuda.nvcc}): the nvcc to run (default: on the PATH, else
 *       /usr/local/cuda/bin/nvcc);
 *   <li>{@code MPI_BUILD_CUDA_DEVICE} ({@code mpibuild.cuda.device}): device ordinal (default: the rank's
 *       rank among the ranks of its node, from the communicator, modulo the number of GPUs).
 * </ul>
 */
public final class CudaBackendProvider implements BackendProvider {
  /** The backend id written into binaries. */
  public static final String ID = "cuda";

  /** Creates the provider; cheap, loads nothing native. */
  public CudaBackendProvider() {}

  @Override
  public String id() {
    return ID;
  }

  @Override
  public int priority() {
    return 100;
  }

  /**
   * Opens the backend as for a rank alone on its node: GPU 0, unless {@code MPI_BUILD_CUDA_DEVICE} names one.
   *
   * @param settings where the backend reads its settings
   * @return the backend
   */
  @Override
  public Backend open(SettingSource settings) {
    return open(settings, Placement.ALONE);
  }

  /**
   * Opens the backend on this rank's GPU: {@code MPI_BUILD_CUDA_DEVICE}, else the one of its rank among its
   * node's ranks, modulo the node's GPUs.
   *
   * @param settings where the backend reads its settings
   * @param placement this rank's rank among the ranks of its node, from the communicator
   * @return the backend
   */
  @Override
  public Backend open(SettingSource settings, Placement placement) {
    return CudaBackend.open(CudaSettings.from(settings), placement);
  }

  @Override
  public List<Setting<?>> settings() {
    return CudaSettings.ALL;
  }

  /**
   * Opens the backend for an automatic choice as for a rank alone on its node.
   *
   * @param settings where the backend reads its settings
   * @return the backend
   */
  @Override
  public Backend openAsDefault(SettingSource settings) {
    return openAsDefault(settings, Placement.ALONE);
  }

  /**
   * Opens the backend for an automatic choice: only on a rank with a usable GPU, the one {@link #open(SettingSource,
   * Placement)} takes.
   *
   * @param settings where the backend reads its settings
   * @param placement this rank's rank among the ranks of its node, from the communicator
   * @return the backend
   * @throws BackendUnavailableException if this rank has no usable GPU, saying why
   */
  @Override
  public Backend openAsDefault(SettingSource settings, Placement placement) {
    CudaBackend b = CudaBackend.open(CudaSettings.from(settings), placement);
    if (!b.hasDevice()) {
      String why = b.deviceProblem();
      b.close();
      throw new BackendUnavailableException("CUDA backend unavailable: " + why, null);
    }
    return b;
  }
}
