package org.mpibuild.opencl;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.mpibuild.LaunchShape;

class PoclSpecializationTest {
  @Test
  void shapesAreNamedAsPoclNamesItsSpecializations() {
    assertEquals(List.of("16-16-1-goffs0-smallgrid", "256-1-1-goffs0-smallgrid", "8-4-2-smallgrid",
        "16-16-1-goffs0", "64-1-1-goffs0"), PoclSpecialization.names(List.of(
            LaunchShape.of("a", 16, 16),
            LaunchShape.of("b", 256).withGlobalSize(1 << 10),
            LaunchShape.of("c", 8, 4, 2).withGlobalOffset(0, 0, 2),
            LaunchShape.of("d", 16, 16).withGlobalSize(65_536, 16),
            LaunchShape.of("e", 64).withGlobalSize(1L << 20),
            LaunchShape.of("f", 16, 16).withGlobalSize(4096, 4096))));
  }

  @Test
  void onePassIsExactOnlyWhereEveryRequestedKernelNamesEveryShape() {
    LaunchShape a16 = LaunchShape.of("a", 16, 16);
    LaunchShape b16 = LaunchShape.of("b", 16, 16);
    LaunchShape b8 = LaunchShape.of("b", 8, 8);
    org.mpibuild.KernelSource ab = org.mpibuild.KernelSource.of("x").withKernels("a", "b");
    assertEquals(true, exact(ab, List.of(a16, b16)));
    assertEquals(false, exact(ab, List.of(a16, b8)), "b would build 16x16, a 8x8, for nothing");
    assertEquals(false, exact(ab, List.of(a16)), "b names nothing");
    assertEquals(false, exact(org.mpibuild.KernelSource.of("x"), List.of(a16)), "every kernel: unknown which");
  }

  static boolean exact(org.mpibuild.KernelSource request, List<LaunchShape> shapes) {
    return PoclSpecialization.exact(request, PoclSpecialization.perKernel(shapes), PoclSpecialization.names(shapes));
  }

  @Test
  void theGridLimitIsPoclsWidestDimensionIncludingItsLocalSizeSquaredTerm() {
    assertEquals(List.of("16-16-1-goffs0-smallgrid"),
        PoclSpecialization.names(List.of(LaunchShape.of("a", 16, 16).withGlobalSize(65_520, 16))));
    assertEquals(List.of("1-1-256-goffs0"),
        PoclSpecialization.names(List.of(LaunchShape.of("a", 1, 1, 256).withGlobalSize(1, 1, 256))));
  }
}
