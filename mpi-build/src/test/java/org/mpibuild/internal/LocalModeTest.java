package org.mpibuild.internal;

import org.mpibuild.testkit.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.mpibuild.BackendUnavailableException;
import org.mpibuild.BinaryData;
import org.mpibuild.Kernel;
import org.mpibuild.KernelLoadException;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;

/** The public API without MPI: surefire runs this JVM without mpirun, so auto mode must fall back to local. */
class LocalModeTest {
  @Test
  void withoutALauncherTheBuildIsLocal() {
    assertFalse(MpiBindings.launchedByMpi(System.getenv()), "this test must not run under mpirun");
    FakeBackend backend = new FakeBackend();
    try (MpiBuild mb = MpiBuild.builder().backend(backend).build();
        Kernel k = mb.mpiBuildKernel(CollectiveBuildTest.SOURCE, 0)) {
      assertEquals(1, mb.size());
      assertEquals(0, mb.rank());
      assertTrue(mb.communicator().startsWith("local"), mb.communicator());
      assertEquals(1, backend.compiles.get());
      assertEquals(0, backend.loads.get());
      assertTrue(k.stats().compiled());
      assertEquals("root", k.stats().role());
      assertEquals(List.of("main"), k.kernelNames());
      assertEquals(FakeBackend.Program.class, k.as(FakeBackend.Program.class).getClass());
      assertThrows(IllegalArgumentException.class, () -> k.as(String.class));
    }
  }

  @Test
  void launcherDetectionReadsTheStandardVariables() {
    assertTrue(MpiBindings.launchedByMpi(Map.of("OMPI_COMM_WORLD_SIZE", "4")));
    assertTrue(MpiBindings.launchedByMpi(Map.of("PMI_RANK", "0")));
    assertFalse(MpiBindings.launchedByMpi(Map.of("HOME", "/root")));
  }

  @Test
  void binaryDataLoadsOnlyOnItsTarget() {
    FakeBackend backend = new FakeBackend();
    try (MpiBuild mb = MpiBuild.builder().local().backend(backend).build()) {
      BinaryData data;
      try (Kernel k = mb.mpiBuildKernel(KernelSource.of(CollectiveBuildTest.SOURCE).withKernels("a"), 0)) {
        data = BinaryData.fromBytes(k.binaryData().toBytes());
      }
      try (Kernel again = mb.buildKernelFromBinaryData(data)) {
        assertEquals(List.of("a"), again.kernelNames());
        assertFalse(again.stats().compiled());
      }
      backend.target = "another-device";
      KernelLoadException e = assertThrows(KernelLoadException.class, () -> mb.buildKernelFromBinaryData(data));
      assertTrue(e.getMessage().contains("another-device"), e.getMessage());
    }
  }

  @Test
  void missingBackendIsReportedNotThrownRaw() {
    BackendUnavailableException e = assertThrows(BackendUnavailableException.class,
        () -> MpiBuild.builder().local().backend("cuda").build());
    assertTrue(e.getMessage().contains("'cuda'"), e.getMessage());
  }

  @Test
  void closedInstanceRefusesWork() {
    MpiBuild mb = MpiBuild.builder().local().backend(new FakeBackend()).build();
    mb.close();
    assertThrows(IllegalStateException.class, () -> mb.mpiBuildKernel(CollectiveBuildTest.SOURCE, 0));
  }
}
