package org.mpibuild.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.mpibuild.BackendUnavailableException;

/**
 * The choice of a CUDA compiler for a build target, without CUDA: compilers are made probed, usable or not.
 */
class CompilerChoiceTest {
  static final String NO_NVCC = "nvcc not found on the PATH, in CUDA_HOME or /usr/local/cuda (set MPI_BUILD_NVCC)";
  static final NvccCompiler NVCC = new NvccCompiler(Path.of("/opt/cuda/bin/nvcc"), "V12.4.131", null);
  static final NvccCompiler MISSING_NVCC = NvccCompiler.probe(null);
  static final NvrtcCompiler NVRTC = new NvrtcCompiler("12.4", null);
  static final NvrtcCompiler MISSING_NVRTC = new NvrtcCompiler(null, "libnvrtc cannot be loaded (UnsatisfiedLinkError: x)");

  @Test
  void theFirstUsableCompilerInTheConfiguredOrderBuilds() {
    assertSame(NVRTC, CompilerChoice.of(List.of("nvrtc", "nvcc"), NVCC, NVRTC).forTarget("sm_90"));
    assertSame(NVCC, CompilerChoice.of(List.of("nvcc", "nvrtc"), NVCC, NVRTC).forTarget("sm_90"));
    assertSame(NVCC, CompilerChoice.of(List.of("nvrtc", "nvcc"), NVCC, MISSING_NVRTC).forTarget("sm_90"));
    assertSame(NVRTC, CompilerChoice.of(List.of("nvcc", "nvrtc"), MISSING_NVCC, NVRTC).forTarget("sm_90"));
  }

  @Test
  void severalArchitecturesAreNvccsFatbin() {
    assertSame(NVCC, CompilerChoice.of(List.of("nvrtc", "nvcc"), NVCC, NVRTC).forTarget("sm_80,sm_90"));
  }

  @Test
  void whenNoneCanBuildTheTargetEachSaysWhy() {
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> CompilerChoice.of(List.of("nvrtc", "nvcc"), MISSING_NVCC, NVRTC).forTarget("sm_80,sm_90"));
    assertEquals("no CUDA compiler can build [sm_80,sm_90]: NVRTC: builds one architecture at a time, not a fatbin;"
        + " nvcc: " + NO_NVCC + ";", e.getMessage());
    e = assertThrows(IllegalStateException.class,
        () -> CompilerChoice.of(List.of("nvrtc"), NVCC, MISSING_NVRTC).forTarget("sm_90"));
    assertEquals("no CUDA compiler can build [sm_90]: NVRTC: libnvrtc cannot be loaded (UnsatisfiedLinkError: x);",
        e.getMessage());
  }

  @Test
  void withNeitherCompilerTheBackendIsUnavailableWhateverTheOrder() {
    BackendUnavailableException e = assertThrows(BackendUnavailableException.class,
        () -> CompilerChoice.of(List.of("nvrtc"), MISSING_NVCC, MISSING_NVRTC));
    assertEquals("CUDA backend unavailable: no CUDA compiler (nvcc: " + NO_NVCC
        + "; NVRTC: libnvrtc cannot be loaded (UnsatisfiedLinkError: x))", e.getMessage());
  }

  @Test
  void theIdentityNamesCompilerVersionAndFlags() {
    assertEquals("nvrtc 12.4 flags=--gpu-architecture=sm_90", NVRTC.identity("sm_90"));
    assertEquals("nvcc /opt/cuda/bin/nvcc V12.4.131 flags=-cubin -arch=sm_90", NVCC.identity("sm_90"));
    assertEquals("nvcc /opt/cuda/bin/nvcc V12.4.131 flags=-fatbin -gencode arch=compute_80,code=sm_80 -gencode"
        + " arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90", NVCC.identity("sm_80,sm_90"));
  }

  @Test
  void nvrtcIsProbedOncePerProcess() {
    NvrtcCompiler first = NvrtcCompiler.probe();
    assertSame(first, NvrtcCompiler.probe());
    assertTrue(first.problem() == null || first.problem().startsWith("libnvrtc cannot be loaded ("), first.problem());
  }
}
