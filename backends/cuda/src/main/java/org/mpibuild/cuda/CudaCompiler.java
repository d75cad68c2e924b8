package org.mpibuild.cuda;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.mpibuild.KernelSource;

/**
 * A compiler of CUDA C++ into a cubin or a fatbin: NVRTC in the JVM, or nvcc as a child process. Each is
 * probed when the backend opens; one that cannot run here says why ({@link #problem()}), and
 * {@link CompilerChoice} takes the first, in the configured order, that can build a target.
 */
sealed interface CudaCompiler permits NvrtcCompiler, NvccCompiler {

  /**
   * What a compiler built.
   *
   * @param binary the cubin or fatbin
   * @param log the compiler's output
   */
  record Output(byte[] binary, String log) {}

  /**
   * Returns its name in messages.
   *
   * @return {@code NVRTC} or {@code nvcc}
   */
  String name();

  /**
   * Returns why it cannot run here.
   *
   * @return the reason, or null if it can run
   */
  String problem();

  /**
   * Returns why it cannot build these architectures into one binary.
   *
   * @param archs the architectures of a build target
   * @return the reason, or null if it can
   */
  default String cannotBuild(List<String> archs) {
    return problem();
  }

  /**
   * Returns what identifies its output for a build target: name, version and flags, for the binary's
   * metadata and the cache key.
   *
   * @param buildTarget the build target
   * @return the identity
   */
  String identity(String buildTarget);

  /**
   * Builds a kernel source for these architectures.
   *
   * @param request the source and its options
   * @param archs the architectures, as {@link CudaArch#parse} gives them
   * @return the binary and the log
   * @throws org.mpibuild.CompileException with the compiler's log, if the source does not compile
   * @throws IllegalArgumentException if the compiler rejects the options
   */
  Output compile(KernelSource request, List<String> archs);

  /**
   * Splits options on whitespace, keeping double-quoted parts together; no shell is involved.
   *
   * @param options the request's options
   * @return one argument each
   */
  static List<String> splitOptions(String options) {
    List<String> out = new ArrayList<>();
    Matcher m = Pattern.compile("\"([^\"]*)\"|(\\S+)").matcher(options);
    while (m.find()) {
      out.add(m.group(1) != null ? m.group(1) : m.group(2));
    }
    return out;
  }
}
