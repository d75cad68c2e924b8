package org.mpibuild.cuda;

import java.util.ArrayList;
import java.util.List;
import jcuda.nvrtc.JNvrtc;
import jcuda.nvrtc.nvrtcProgram;
import jcuda.nvrtc.nvrtcResult;
import org.mpibuild.CompileException;
import org.mpibuild.KernelSource;
import org.mpibuild.support.BackendSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * NVRTC, through JCuda, where libnvrtc is present: builds one architecture at a time, into a cubin. The library
 * is probed once per process.
 */
final class NvrtcCompiler implements CudaCompiler {
  private static final Logger log = LoggerFactory.getLogger(NvrtcCompiler.class);
  /** What the first {@link #probe()} found; never probed again. */
  private static NvrtcCompiler probed;

  private final String version;
  private final String problem;

  /**
   * @param version its version, {@code major.minor}, or null if it cannot run
   * @param problem why it cannot run, or null if it can
   */
  NvrtcCompiler(String version, String problem) {
    this.version = version;
    this.problem = problem;
  }

  /**
   * Loads libnvrtc through JCuda (see {@link JCudaNatives}) and asks its version, once per process.
   *
   * @return NVRTC, with its version or why it cannot run
   */
  static synchronized NvrtcCompiler probe() {
    if (probed == null) {
      probed = load();
    }
    return probed;
  }

  private static NvrtcCompiler load() {
    try {
      int[] major = new int[1];
      int[] minor = new int[1];
      JCudaNatives.load(JNvrtc.class, "JNvrtc", () -> check(JNvrtc.nvrtcVersion(major, minor), "nvrtcVersion"));
      return new NvrtcCompiler(major[0] + "." + minor[0], null);
    } catch (LinkageError | RuntimeException e) {
      log.debug("NVRTC probe failed", e);
      return new NvrtcCompiler(null, "libnvrtc cannot be loaded (" + BackendSupport.firstLine(e) + ")");
    }
  }

  @Override
  public String name() {
    return "NVRTC";
  }

  @Override
  public String problem() {
    return problem;
  }

  /** NVRTC cannot build a fatbin: several architectures are nvcc's. */
  @Override
  public String cannotBuild(List<String> archs) {
    if (problem != null) {
      return problem;
    }
    return archs.size() > 1 ? "builds one architecture at a time, not a fatbin" : null;
  }

  @Override
  public String identity(String buildTarget) {
    return "nvrtc " + version + " flags=--gpu-architecture=" + buildTarget;
  }

  /** Builds a cubin for the one architecture in {@code archs}. */
  @Override
  public Output compile(KernelSource request, List<String> archs) {
    nvrtcProgram prog = new nvrtcProgram();
    check(JNvrtc.nvrtcCreateProgram(prog, request.source(), "kernel.cu", 0, null, null), "nvrtcCreateProgram");
    try {
      List<String> options = new ArrayList<>();
      options.add("--gpu-architecture=" + archs.get(0));
      options.addAll(CudaCompiler.splitOptions(request.options()));
      int rc = JNvrtc.nvrtcCompileProgram(prog, options.size(), options.toArray(new String[0]));
      String[] log = new String[1];
      JNvrtc.nvrtcGetProgramLog(prog, log);
      String buildLog = log[0] == null ? "" : log[0];
      if (rc == nvrtcResult.NVRTC_ERROR_INVALID_OPTION) {
        throw new IllegalArgumentException("invalid build options '" + request.options() + "': " + buildLog.strip());
      }
      if (rc != nvrtcResult.NVRTC_SUCCESS) {
        throw new CompileException("NVRTC failed: " + nvrtcResult.stringFor(rc), buildLog);
      }
      return new Output(cubin(prog), buildLog);
    } finally {
      JNvrtc.nvrtcDestroyProgram(prog);
    }
  }

  private static byte[] cubin(nvrtcProgram prog) {
    long[] size = new long[1];
    check(JNvrtc.nvrtcGetCUBINSize(prog, size), "nvrtcGetCUBINSize");
    byte[] cubin = new byte[(int) size[0]];
    check(JNvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN");
    return cubin;
  }

  private static void check(int rc, String what) {
    if (rc != nvrtcResult.NVRTC_SUCCESS) {
      throw new IllegalStateException(what + " failed: " + nvrtcResult.stringFor(rc));
    }
  }
}
