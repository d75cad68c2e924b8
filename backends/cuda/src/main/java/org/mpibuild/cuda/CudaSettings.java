package org.mpibuild.cuda;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.mpibuild.spi.Setting;
import org.mpibuild.spi.SettingSource;

/** The CUDA backend's settings, read once from system properties and environment variables. */
record CudaSettings(List<String> explicitArchs, List<String> compilerOrder, Path nvcc, Integer deviceOrdinal) {

  static final Setting<String> ARCH = Setting.text("MPI_BUILD_CUDA_ARCH", "mpibuild.cuda.arch", null,
      "the job's GPUs", "CUDA architectures to build for, e.g. `sm_80,sm_90`");
  static final Setting<String> COMPILERS = Setting.text("MPI_BUILD_CUDA_COMPILERS", "mpibuild.cuda.compilers",
      "nvrtc,nvcc", "`nvrtc,nvcc`", "CUDA compilers in order of preference");
  static final Setting<Path> NVCC = Setting.path("MPI_BUILD_NVCC", "mpibuild.cuda.nvcc",
      "nvcc on the PATH, else `/usr/local/cuda/bin/nvcc`", "the nvcc to run");
  static final Setting<Integer> DEVICE = Setting.count("MPI_BUILD_CUDA_DEVICE", "mpibuild.cuda.device", -1, 0, 1 << 16,
      "local rank modulo GPUs", "the GPU ordinal");
  static final List<Setting<?>> ALL = List.of(ARCH, COMPILERS, NVCC, DEVICE);

  static CudaSettings from(SettingSource s) {
    List<String> compilers = new ArrayList<>();
    for (String c : COMPILERS.read(s).split("[,\\s]+")) {
      String n = c.trim().toLowerCase(Locale.ROOT);
      if (!n.equals("nvcc") && !n.equals("nvrtc")) {
        throw new IllegalArgumentException(COMPILERS.names() + ": '" + c + "' is not nvcc or nvrtc");
      }
      compilers.add(n);
    }
    int ordinal = DEVICE.read(s);
    String arch = ARCH.read(s);
    Path nvcc = NVCC.read(s);
    return new CudaSettings(arch == null || arch.isBlank() ? List.of() : CudaArch.parse(arch), compilers,
        nvcc == null ? findNvcc() : nvcc, ordinal < 0 ? null : ordinal);
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
