package org.mpibuild.internal.startup;

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
import org.mpibuild.CommunicatorInfo;
import org.mpibuild.Kernel;
import org.mpibuild.KernelLoadException;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.internal.protocol.CollectiveBuildTest;
import org.mpibuild.internal.settings.Settings;

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
      assertTrue(mb.communicator().local(), mb.communicator().toString());
      assertEquals("local (no MPI), 1 rank", mb.communicator().toString());
      assertEquals(new CommunicatorInfo("local (no MPI), 1 rank", 0, 1, true), mb.communicator());
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

  /**
   * Launched as one rank of several with no binding on the class path (this module's tests have none):
   * no silent local build, but a failure naming the artifacts and the setting, also on stderr.
   */
  @Test
  void launchedWithSeveralRanksAndNoBindingFailsNamingWhatToAdd() {
    java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
    java.io.PrintStream saved = System.err;
    org.mpibuild.MpiUnavailableException e;
    System.setErr(new java.io.PrintStream(err, true));
    try {
      e = assertThrows(org.mpibuild.MpiUnavailableException.class, () -> MpiBindings.openWorld(Settings.Mode.AUTO,
          Settings.Binding.AUTO, Map.of("OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_RANK", "1")));
    } finally {
      System.setErr(saved);
    }
    for (String s : List.of("one of 2 ranks", "org.mpibuild:mpi-build-mpijava", "org.mpibuild:mpi-build-ffm",
        "MPI_BUILD_MODE=local", "mpi-build-mpijava is not on the class path")) {
      assertTrue(e.getMessage().contains(s), s + " in: " + e.getMessage());
    }
    assertTrue(err.toString().contains("mpi-build: warning: " + e.getMessage()), err.toString());
    assertTrue(MpiBindings.openWorld(Settings.Mode.LOCAL, Settings.Binding.AUTO, Map.of("OMPI_COMM_WORLD_SIZE", "2"))
        .description().startsWith("local"), "MPI_BUILD_MODE=local builds locally on purpose");
  }

  @Test
  void theLaunchersSizeIsReadFromEachLaunchersVariables() {
    assertEquals(4, MpiBindings.launchedSize(Map.of("OMPI_COMM_WORLD_SIZE", "4")));
    assertEquals(3, MpiBindings.launchedSize(Map.of("PMI_RANK", "0", "PMI_SIZE", "3"))); // Hydra
    assertEquals(8, MpiBindings.launchedSize(Map.of("PMIX_RANK", "0", "SLURM_STEP_NUM_TASKS", "8"))); // srun --mpi=pmix
    assertEquals(0, MpiBindings.launchedSize(Map.of("SLURM_NTASKS", "8")), "a batch script's plain java is one process");
    assertEquals(0, MpiBindings.launchedSize(Map.of("PMIX_RANK", "0")), "size not told");
  }

  @Test
  void binaryDataLoadsOnlyOnItsTarget() {
    FakeBackend backend = new FakeBackend();
    try (MpiBuild mb = MpiBuild.builder().local().backend(backend).build()) {
      BinaryData data;
      try (Kernel k = mb.mpiBuildKernel(KernelSource.of(CollectiveBuildTest.SOURCE).withKernels("a"), 0)) {
        data = BinaryData.fromBytes(k.binaryData().toBytes());
      }
      byte[] binary = data.binary();
      assertEquals(data.binaryLength(), binary.length);
      assertEquals(data.sha256(), java.util.HexFormat.of().formatHex(sha256(binary)), "the binary, not the envelope");
      binary[0] ^= 1;
      assertEquals(data.sha256(), java.util.HexFormat.of().formatHex(sha256(data.binary())), "a copy each time");
      try (Kernel again = mb.buildKernelFromBinaryData(data)) {
        assertEquals(List.of("a"), again.kernelNames());
        assertFalse(again.stats().compiled());
      }
      backend.target = "another-device";
      KernelLoadException e = assertThrows(KernelLoadException.class, () -> mb.buildKernelFromBinaryData(data));
      assertTrue(e.getMessage().contains("another-device"), e.getMessage());
    }
  }

  private static byte[] sha256(byte[] bytes) {
    try {
      return java.security.MessageDigest.getInstance("SHA-256").digest(bytes);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new AssertionError(e);
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
