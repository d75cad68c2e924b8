package org.mpibuild.cuda;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The CUDA backend's settings, read once from system properties and environment variables. */
record CudaSettings(List<String> explicitArchs, List<String> compilerOrder, Path nvcc, Integer deviceOrdinal) {

  static CudaSettings fromEnvironment() {
    String arch = setting("mpibuild.cuda.arch", "MPI_BUILD_CUDA_ARCH");
    String order = setting("mpibuild.cuda.compilers", "MPI_BUILD_CUDA_COMPILERS");
    String nvcc = setting("mpibuild.cuda.nvcc", "MPI_BUILD_NVCC");
    String device = setting("mpibuild.cuda.device", "MPI_BUILD_CUDA_DEVICE");
    List<String> compilers = new ArrayList<>();
    for (String c : (order == null || order.isBlank() ? "nvrtc,nvcc" : order).split("[,\\s]+")) {
      String n = c.trim().toLowerCase(Locale.ROOT);
      if (!n.equals("nvcc") && !n.equals("nvrtc")) {
        throw new IllegalArgumentException("MPI_BUILD_CUDA_COMPILERS: '" + c + "' is not nvcc or nvrtc");
      }
      compilers.add(n);
    }
    Integer ordinal = null;
    if (device != null && !device.isBlank()) {
      try {
        ordinal = Integer.parseInt(device.trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("MPI_BUILD_CUDA_DEVICE is '" + device + "'; expected a device ordinal", e);
      }
    }
    return new CudaSettings(arch == null || arch.isBlank() ? List.of() : CudaArch.parse(arch), compilers,
        nvcc == null || nvcc.isBlank() ? findNvcc() : Path.of(nvcc), ordinal);
  }

  static String setting(String property, String variable) {
    String v = System.getProperty(property);
    return v != null ? v : System.getenv(variable);
  }

  /** nvcc on the PATH, else under CUDA_HOME or /usr/local/cuda; null if none. */
  static Path findNvcc() {
    String path = System.getenv("PATH");
    if (path != null) {
      for (String dir : path.split(":")) {
        Path p = Path.of(dir.isEmpty() ? "." : dir, "nvcc");
        if (Files.isExecutable(p)) {
          return p;
        }
      }
    }
    for (String home : new String[] {System.getenv("CUDA_HOME"), "/usr/local/cuda"}) {
      if (home != null) {
        Path p = Path.of(home, "bin", "nvcc");
        if (Files.isExecutable(p)) {
          return p;
        }
      }
    }
    return null;
  }
}
