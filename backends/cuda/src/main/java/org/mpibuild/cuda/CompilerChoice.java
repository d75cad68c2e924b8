package org.mpibuild.cuda;

import java.util.List;
import org.mpibuild.BackendUnavailableException;

/**
 * The CUDA compilers in the order of {@code MPI_BUILD_CUDA_COMPILERS}, and the choice among them for a build
 * target: the first that can build it.
 *
 * @param inOrder the compilers, in order of preference
 */
record CompilerChoice(List<CudaCompiler> inOrder) {

  /**
   * Probes nvcc and NVRTC and orders them as the settings say.
   *
   * @param settings the backend's settings
   * @return the choice
   * @throws BackendUnavailableException if neither can run here
   */
  static CompilerChoice probe(CudaSettings settings) {
    NvccCompiler nvcc = NvccCompiler.probe(settings.nvcc());
    return of(settings.compilerOrder(), nvcc, NvrtcCompiler.probe());
  }

  /**
   * Orders probed compilers.
   *
   * @param order {@code nvcc} and {@code nvrtc}, in order of preference
   * @param nvcc nvcc, probed
   * @param nvrtc NVRTC, probed
   * @return the choice
   * @throws BackendUnavailableException if neither can run here, whatever the order
   */
  static CompilerChoice of(List<String> order, NvccCompiler nvcc, NvrtcCompiler nvrtc) {
    if (nvcc.problem() != null && nvrtc.problem() != null) {
      throw new BackendUnavailableException("CUDA backend unavailable: no CUDA compiler (nvcc: " + nvcc.problem()
          + "; NVRTC: " + nvrtc.problem() + ")", null);
    }
    return new CompilerChoice(order.stream().map(c -> c.equals("nvrtc") ? (CudaCompiler) nvrtc : nvcc).toList());
  }

  /**
   * Returns the first compiler, in order, that can build a target.
   *
   * @param buildTarget the build target
   * @return the compiler
   * @throws IllegalStateException if none can, saying why for each
   */
  CudaCompiler forTarget(String buildTarget) {
    List<String> archs = CudaArch.parse(buildTarget);
    StringBuilder why = new StringBuilder();
    for (CudaCompiler c : inOrder) {
      String problem = c.cannotBuild(archs);
      if (problem == null) {
        return c;
      }
      why.append(' ').append(c.name()).append(": ").append(problem).append(';');
    }
    throw new IllegalStateException("no CUDA compiler can build [" + buildTarget + "]:" + why);
  }
}
