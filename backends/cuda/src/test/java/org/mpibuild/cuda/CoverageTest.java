package org.mpibuild.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.mpibuild.cuda.CudaBinaryContentsTest.Entry;

/**
 * The root's report of what a binary holds for the ranks it is for, on made-up binaries: runs without CUDA
 * ({@link CudaFatbinCompileTest} checks it on nvcc's output where nvcc is present).
 */
class CoverageTest {
  static final String SUMMARY = "mpi-build: the binary is a fatbin with SASS for sm_80, sm_90 and PTX compute_90"
      + " (PTX ISA 9.0)";

  @Test
  void ranksThatRunSassAreNotReportedAndTheOthersAreCountedOncePerTarget() {
    Coverage c = Coverage.of(CudaBinaryContentsTest.SM80_SM90_PTX90, List.of("sm_80", "sm_90"),
        List.of("sm_90", "sm_100", "none", "sm_86", "sm_100", "sm_75"));
    assertEquals(List.of(SUMMARY, "mpi-build: no SASS for sm_86 (the GPU of 1 rank in the job that built it); those ranks"
        + " run the binary-compatible SASS for sm_80, without JIT"), c.info());
    assertEquals(List.of("mpi-build: no SASS for sm_100 (the GPU of 2 ranks in the job that built it); those ranks"
        + " JIT-compile the PTX compute_90 (PTX ISA 9.0) at load (add sm_100 to MPI_BUILD_CUDA_ARCH, or unset it to"
        + " build for the job's GPUs)", "mpi-build: no code for sm_75 (the GPU of 1 rank in the job that built it):"
        + " neither SASS nor PTX it can JIT-compile; those ranks cannot load the binary"), c.warnings());
  }

  @Test
  void anArchitectureAskedForWithoutSassIsAWarning() {
    byte[] onlySm80 = CudaBinaryContentsTest.fatbin(Entry.sass(80), Entry.ptx(90));
    Coverage c = Coverage.of(onlySm80, List.of("sm_80", "sm_90"), List.of());
    assertEquals(List.of("mpi-build: sm_90 was asked for, but the binary holds no SASS for it (check the build"
        + " options)"), c.warnings());
  }

  @Test
  void anUnreadableBinaryIsAWarningNotAFailure() {
    Coverage c = Coverage.of(new byte[] {1, 2, 3}, List.of("sm_80"), List.of("sm_80"));
    assertEquals(List.of(), c.info());
    assertEquals(1, c.warnings().size());
    assertTrue(c.warnings().get(0).startsWith("mpi-build: cannot list what the binary holds, so whether ranks"
        + " JIT-compile PTX is unknown: "), c.warnings().get(0));
  }

  @Test
  void theLinesFollowTheCompilersLogOnTheirOwnLines() {
    Coverage c = new Coverage(List.of("mpi-build: i"), List.of("mpi-build: w"));
    assertEquals("ptxas info\nmpi-build: i\nmpi-build: w\n", c.appendTo("ptxas info"));
    assertEquals("ptxas info\nmpi-build: i\nmpi-build: w\n", c.appendTo("ptxas info\n"));
    assertEquals("mpi-build: i\nmpi-build: w\n", c.appendTo(null));
    assertEquals("mpi-build: i\nmpi-build: w\n", c.appendTo(""));
  }
}
