package org.mpibuild.cuda;

import java.util.List;
import java.util.ServiceLoader;
import org.mpibuild.BackendUnavailableException;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.BackendProvider;
import org.mpibuild.spi.Setting;
import org.mpibuild.spi.SettingSource;
import org.mpibuild.internal.settings.Settings;

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
 *   <li>{@code MPI_BUILD_CUDA_DEVICE} ({@code mpibuild.cuda.device}): device ordinal (default: the local
 *       rank modulo the number of GPUs).
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

  @Override
  public Backend open(SettingSource settings) {
    return CudaBackend.open(CudaSettings.from(settings));
  }

  @Override
  public List<Setting<?>> settings() {
    return CudaSettings.ALL;
  }

  @Override
  public Backend openAsDefault(SettingSource settings) {
    CudaBackend b = CudaBackend.open(CudaSettings.from(settings));
    if (!b.hasDevice()) {
      String why = b.deviceProblem();
      b.close();
      throw new BackendUnavailableException("CUDA backend unavailable: " + why, null);
    }
    return b;
  }
}
