package org.mpibuild.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.mpibuild.BackendUnavailableException;
import org.mpibuild.BinaryData;
import org.mpibuild.CompileException;
import org.mpibuild.KernelLoadException;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.CacheAdmin;
import org.mpibuild.spi.Placement;

/**
 * The CUDA backend without a GPU: nvcc builds for architectures named explicitly, and the binary is
 * checked; a missing driver is reported cleanly. Skips, saying why, where nvcc is absent.
 */
class CudaBuildTest {
  static final String SAXPY = "extern \"C\" __global__ void saxpy(float a, const float* x, float* y, int n) {\n"
      + "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = a * x[i] + y[i];\n}\n";
  static final KernelSource REQUEST = KernelSource.of(SAXPY).withKernels("saxpy").withOptions("-O3");

  @BeforeAll
  static void needNvcc() {
    boolean present = CudaSettings.findNvcc() != null;
    if (!present) {
      System.out.println("CudaBuildTest skipped: nvcc is not on the PATH, in CUDA_HOME or /usr/local/cuda");
    }
    Assumptions.assumeTrue(present, "nvcc is not on the PATH, in CUDA_HOME or /usr/local/cuda");
  }

  static CudaSettings archs(String spec) {
    return new CudaSettings(CudaArch.parse(spec), List.of("nvrtc", "nvcc"), CudaSettings.findNvcc(), null);
  }

  /** Opens the backend as for a rank alone on its node. */
  static CudaBackend open(CudaSettings settings) {
    return CudaBackend.open(settings, Placement.ALONE);
  }

  static MpiBuild local(String spec) {
    return MpiBuild.builder().local().noCache().backend(open(archs(spec))).build();
  }

  @Test
  void oneArchitectureGivesACubin() {
    try (MpiBuild mb = local("sm_80")) {
      BinaryData data = mb.mpiBuildBinary(REQUEST, 0);
      byte[] payload = BinaryData.fromBytes(data.toBytes()).binary();
      assertEquals("cuda", data.backend());
      assertEquals("sm_80", data.target());
      assertEquals(List.of("saxpy"), data.kernelNames());
      assertTrue(data.compiler().startsWith("nvcc ") && data.compiler().contains("-arch=sm_80"), data.compiler());
      assertArrayEquals(new byte[] {0x7f, 'E', 'L', 'F'}, Arrays.copyOf(payload, 4), "a cubin is an ELF file");
    }
  }

  @Test
  void severalArchitecturesGiveAFatbin() {
    try (MpiBuild mb = local("sm_90, 80")) {
      BinaryData data = mb.mpiBuildBinary(REQUEST, 0);
      assertEquals("sm_80,sm_90", data.target());
      assertTrue(data.compiler().contains("arch=compute_90,code=compute_90"), "PTX of the newest: " + data.compiler());
      byte[] payload = data.binary();
      assertArrayEquals(new byte[] {0x50, (byte) 0xED, 0x55, (byte) 0xBA}, Arrays.copyOf(payload, 4),
          "fatbin magic 0xBA55ED50");
    }
  }

  @Test
  void compileErrorCarriesNvccsLog() {
    try (MpiBuild mb = local("sm_80")) {
      CompileException e = assertThrows(CompileException.class, () -> mb.mpiBuildBinary(
          KernelSource.of("extern \"C\" __global__ void k(float* y) { y[0] = undeclared_value; }").withKernels("k"), 0));
      assertTrue(e.buildLog().contains("undeclared_value"), e.buildLog());
      assertTrue(e.getMessage().contains("nvcc failed"), e.getMessage());
    }
  }

  @Test
  void unknownOptionIsNamed() {
    try (MpiBuild mb = local("sm_80")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> mb.mpiBuildBinary(REQUEST.withOptions("--no-such-flag"), 0));
      assertTrue(e.getMessage().contains("--no-such-flag"), e.getMessage());
    }
  }

  @Test
  void kernelNamesAreRequired() {
    try (MpiBuild mb = local("sm_80")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> mb.mpiBuildBinary(KernelSource.of(SAXPY), 0));
      assertTrue(e.getMessage().contains("extern \"C\""), e.getMessage());
    }
  }

  @Test
  void theKeyChangesWithTheArchitecture() {
    CudaBackend a = open(archs("sm_80"));
    CudaBackend b = open(archs("sm_90"));
    CudaBackend ab = open(archs("sm_80,sm_90"));
    try {
      assertNotEquals(CacheAdmin.keyOf(REQUEST, a), CacheAdmin.keyOf(REQUEST, b));
      assertNotEquals(CacheAdmin.keyOf(REQUEST, a), CacheAdmin.keyOf(REQUEST, ab));
      assertEquals(CacheAdmin.keyOf(REQUEST, a), CacheAdmin.keyOf(REQUEST, open(archs("80"))));
    } finally {
      a.close();
      b.close();
      ab.close();
    }
  }

  @Test
  void withoutAGpuTheDriverIsReportedCleanly() {
    CudaBackend probe = open(archs("sm_80"));
    boolean gpu = probe.hasDevice();
    probe.close();
    if (gpu) {
      System.out.println("withoutAGpuTheDriverIsReportedCleanly skipped: this machine has a usable GPU");
    }
    Assumptions.assumeFalse(gpu, "this machine has a usable GPU");
    CudaSettings none = new CudaSettings(List.of(), List.of("nvrtc", "nvcc"), CudaSettings.findNvcc(), null);
    BackendUnavailableException e = assertThrows(BackendUnavailableException.class, () -> open(none));
    assertTrue(e.getMessage().startsWith("CUDA backend unavailable: "), e.getMessage());
    assertTrue(e.getMessage().contains("MPI_BUILD_CUDA_ARCH"), e.getMessage());
    // A second probe gives the same answer, never a raw linkage error.
    assertEquals(e.getMessage(), assertThrows(BackendUnavailableException.class, () -> open(none)).getMessage());
    // Loading needs a GPU: the build fails cleanly, naming why.
    try (MpiBuild mb = local("sm_80")) {
      KernelLoadException le = assertThrows(KernelLoadException.class, () -> mb.mpiBuildKernel(REQUEST, 0));
      assertTrue(le.getMessage().contains("cannot load it"), le.getMessage());
    }
  }

  @Test
  void architectureSpecsAreParsedAndChecked() {
    assertEquals(List.of("sm_70", "sm_80", "sm_90"), CudaArch.parse("90,sm_80 compute_70"));
    assertTrue(CudaArch.runs("sm_80,sm_90", "sm_90"));
    assertTrue(CudaArch.runs("sm_80,sm_90", "sm_100"), "PTX of sm_90 JIT-compiles on newer GPUs");
    assertTrue(!CudaArch.runs("sm_90", "sm_80"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> CudaArch.parse("volta")).getMessage()
        .contains("'volta'"));
  }
}
