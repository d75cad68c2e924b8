package org.mpibuild.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.mpibuild.BinaryData;
import org.mpibuild.MpiBuild;
import org.mpibuild.spi.Compilation;

/**
 * Receivers never JIT: the binary nvcc builds through the backend's own compile path holds SASS for every
 * architecture asked for, and the root reports, in the build log every rank receives, each rank target that
 * would JIT-compile PTX or could not load at all. Runs without a GPU; skips, saying why, without nvcc.
 */
class CudaFatbinCompileTest {

  @BeforeAll
  static void needNvcc() {
    boolean present = CudaSettings.findNvcc() != null;
    if (!present) {
      System.out.println("CudaFatbinCompileTest skipped: nvcc is not on the PATH, in CUDA_HOME or /usr/local/cuda");
    }
    Assumptions.assumeTrue(present, "nvcc is not on the PATH, in CUDA_HOME or /usr/local/cuda");
  }

  /** Builds with nvcc only (never NVRTC), so that several architectures give one fatbin. */
  static CudaBackend nvccFor(String archs) {
    return CudaBuildTest.open(new CudaSettings(CudaArch.parse(archs), List.of("nvcc"), CudaSettings.findNvcc(), null));
  }

  static Compilation compile(CudaBackend backend, List<String> rankTargets) {
    String target = backend.buildTarget(rankTargets);
    Compilation c = backend.compile(CudaBuildTest.REQUEST, target);
    if (c.program() != null) {
      c.program().close(); // a machine with a GPU of one of these architectures loads it as well
    }
    return c;
  }

  @Test
  void aFatbinForTwoArchitecturesHoldsSassForBothAndPtxOfTheNewest() {
    CudaBackend backend = nvccFor("sm_80,sm_90");
    try {
      Compilation c = compile(backend, List.of("sm_80", "sm_90", "sm_90"));
      CudaBinaryContents found = CudaBinaryContents.read(c.binary());
      assertEquals("fatbin", found.container());
      assertEquals(List.of("sm_80", "sm_90"), found.sassNames());
      assertEquals(List.of("compute_90"), found.ptxNames());
      assertTrue(found.ptx().get(0).versionMajor() >= 8, "nvcc 13 writes PTX ISA 9.0: " + found.summary());
      CudaBinaryContents expected = CudaBinaryContents.ofTarget(CudaArch.parse("sm_80,sm_90"));
      assertEquals(expected.sassNames(), found.sassNames(), "what the nvcc flags promise is what the fatbin holds");
      assertEquals(expected.ptxNames(), found.ptxNames());
      assertTrue(c.buildLog().contains("mpi-build: the binary is a fatbin with SASS for sm_80, sm_90 and PTX compute_90"),
          c.buildLog());
      assertTrue(!c.buildLog().contains("JIT"), "every rank has SASS: " + c.buildLog());
    } finally {
      backend.close();
    }
  }

  @Test
  void aRankTargetWithoutSassIsReportedInTheBuildLog() {
    CudaBackend backend = nvccFor("sm_80,sm_90");
    try {
      Compilation c = compile(backend, List.of("sm_90", "sm_100", "sm_100", "sm_86", "sm_75", "none"));
      String log = c.buildLog();
      assertTrue(log.contains("mpi-build: no SASS for sm_100 (the GPU of 2 ranks in the job that built it); those ranks"
          + " JIT-compile the PTX compute_90 (PTX ISA"), log);
      assertTrue(log.contains("mpi-build: no SASS for sm_86 (the GPU of 1 rank in the job that built it); those ranks run the"
          + " binary-compatible SASS for sm_80, without JIT"), log);
      assertTrue(log.contains("mpi-build: no code for sm_75 (the GPU of 1 rank in the job that built it): neither SASS nor PTX"),
          log);
      assertTrue(!log.contains("sm_90 (the GPU"), "sm_90 has SASS: " + log);
      // A receiver of architecture sm_100 is told, at load, which PTX its driver compiles.
      String atLoad = ModuleLoader.loadWarning(CudaBinaryContents.read(c.binary()), "sm_100");
      assertTrue(atLoad.contains("this GPU (sm_100) has no SASS") && atLoad.contains("PTX compute_90"), atLoad);
    } finally {
      backend.close();
    }
  }

  @Test
  void aSingleArchitectureCubinIsRecognized() {
    CudaBackend backend = nvccFor("sm_86");
    try {
      Compilation c = compile(backend, List.of("sm_86", "sm_89"));
      CudaBinaryContents found = CudaBinaryContents.read(c.binary());
      assertEquals("cubin", found.container());
      assertEquals(List.of("sm_86"), found.sassNames());
      assertEquals(List.of(), found.ptxNames());
      assertTrue(c.buildLog().contains("mpi-build: the binary is a cubin with SASS for sm_86 and no PTX"), c.buildLog());
      assertTrue(c.buildLog().contains("no SASS for sm_89") && c.buildLog().contains("binary-compatible SASS for sm_86"),
          c.buildLog());
    } finally {
      backend.close();
    }
  }

  @Test
  void theReportTravelsWithTheBinary() {
    try (MpiBuild mb = CudaBuildTest.local("sm_80,sm_90")) {
      BinaryData data = mb.mpiBuildBinary(CudaBuildTest.REQUEST, 0);
      assertTrue(data.buildLog().contains("mpi-build: the binary is a fatbin with SASS for sm_80, sm_90"),
          data.buildLog());
    }
  }
}
