package org.mpibuild.examples.cg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.mpibuild.BackendUnavailableException;
import org.mpibuild.BinaryData;
import org.mpibuild.Kernel;
import org.mpibuild.MpiBuild;

/**
 * The solver's kernels in both languages, from one body: every word the body leaves to a language is defined by
 * both, each source compiles where its compiler is (nvcc or NVRTC for CUDA, without a GPU; an OpenCL platform
 * such as PoCL), and both launch the same work-items.
 */
class CgKernelsTest {
  private static Set<String> matches(String regex, String text) {
    Set<String> found = new TreeSet<>();
    Matcher m = Pattern.compile(regex).matcher(text);
    while (m.find()) {
      found.add(m.group(1));
    }
    return found;
  }

  @Test
  void everyWordTheBodyLeavesToALanguageIsDefinedByBothAndNoOtherWordOfEither() {
    Set<String> used = matches("\\b(CG_[A-Z_]+)\\b", CgKernels.BODY);
    assertTrue(used.containsAll(List.of("CG_KERNEL", "CG_GLOBAL", "CG_BARRIER", "CG_GLOBAL_ID_X")), used.toString());
    String define = "#define (CG_[A-Z_]+)\\b";
    assertEquals(used, matches(define, CgKernels.SOURCE), "the OpenCL source defines what the body uses");
    assertEquals(used, matches(define, CgKernels.CUDA_SOURCE), "the CUDA source defines what the body uses");
    for (String word : List.of("__kernel", "__global", "__local", "get_global_id", "barrier(", "__shared__",
        "__syncthreads", "blockIdx", "threadIdx", "__device__")) {
      assertFalse(CgKernels.BODY.contains(word), "the body says " + word + " itself");
    }
    assertEquals(List.of("stencil", "partial_dot", "sum_partials", "update_xr", "update_p"),
        List.copyOf(matches("CG_KERNEL void (\\w+)\\(", CgKernels.BODY)).stream()
            .sorted(java.util.Comparator.comparing(CgKernels.KERNELS::indexOf)).toList());
    assertTrue(CgKernels.BODY.indexOf("CG_KERNEL void update_p(") > CgKernels.BODY.indexOf("void update_xr("));
  }

  @Test
  void bothBackendsLaunchTheSameWorkItemsOnWholeGroups() {
    int[][] items = {{1, 1}, {33, 9}, {16, 4}, {17, 5}, {512, 256}, {64 * 256, 1}};
    int[][] groups = {{16, 4}, {16, 4}, {16, 4}, {16, 4}, {16, 4}, {64, 1}};
    for (int i = 0; i < items.length; i++) {
      long[] global = OpenClCg.global(items[i], groups[i]);
      int[] grid = CudaCg.grid(items[i], groups[i]);
      int[] block = CudaCg.block(groups[i]);
      assertEquals(1, grid[2]);
      assertEquals(1, block[2]);
      for (int d = 0; d < 2; d++) {
        assertEquals(global[d], (long) grid[d] * block[d], "items " + items[i][d] + " in groups of " + groups[i][d]);
        assertTrue(global[d] >= items[i][d] && global[d] < items[i][d] + groups[i][d], "global " + global[d]);
      }
    }
    assertEquals(List.of(4, 1, 1), List.of(CudaCg.grid(new int[] {4 * 64}, new int[] {64})[0],
        CudaCg.grid(new int[] {4 * 64}, new int[] {64})[1], CudaCg.block(new int[] {64})[1]));
  }

  @Test
  void theCudaSourceCompilesWithoutAGpu() {
    BinaryData binary;
    try (MpiBuild build = MpiBuild.builder().backend("cuda").local().noCache().set("MPI_BUILD_CUDA_ARCH", "sm_80")
        .build()) {
      binary = build.mpiBuildBinary(CgKernels.cudaRequest(), 0);
    } catch (BackendUnavailableException e) {
      System.out.println("CgKernelsTest.theCudaSourceCompilesWithoutAGpu skipped: " + e.getMessage());
      Assumptions.assumeTrue(false, e.getMessage());
      return;
    }
    assertEquals("cuda", binary.backend());
    assertEquals("sm_80", binary.target());
    assertEquals(CgKernels.KERNELS, binary.kernelNames());
    assertTrue(binary.binary().length > 0);
  }

  @Test
  void theOpenClSourceBuildsAndLoadsWithItsLaunchShapes() {
    MpiBuild build;
    try {
      build = MpiBuild.builder().backend("opencl").local().noCache().build();
    } catch (BackendUnavailableException e) {
      System.out.println("CgKernelsTest.theOpenClSourceBuildsAndLoadsWithItsLaunchShapes skipped: " + e.getMessage());
      Assumptions.assumeTrue(false, e.getMessage());
      return;
    }
    try (build; Kernel kernel = build.mpiBuildKernel(CgKernels.request(true), 0)) {
      assertEquals(CgKernels.KERNELS, kernel.binaryData().kernelNames());
    }
  }
}
