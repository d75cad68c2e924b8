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
  void theGridLimitIsPoclsWidestDimensionIncludingItsLocalSizeSquaredTerm() {
    assertEquals(List.of("16-16-1-goffs0-smallgrid"),
        PoclSpecialization.names(List.of(LaunchShape.of("a", 16, 16).withGlobalSize(65_520, 16))));
    assertEquals(List.of("1-1-256-goffs0"),
        PoclSpecialization.names(List.of(LaunchShape.of("a", 1, 1, 256).withGlobalSize(1, 1, 256))));
  }
}
