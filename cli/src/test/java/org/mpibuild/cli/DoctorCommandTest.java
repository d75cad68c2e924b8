package org.mpibuild.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.Kernel;
import org.mpibuild.MpiBuild;
import org.mpibuild.testkit.FakeBackend;

/**
 * {@code mpi-build doctor} (docs/cli.md): exit 0 when what a build needs is here, else exit 1 with the fix
 * printed. Settings are given as system properties, which win over the environment, and restored after.
 */
class DoctorCommandTest {
  @TempDir
  Path tmp;

  /** Runs doctor with {@code properties} set (then cleared). */
  static Cli.Run doctor(Map<String, String> properties) {
    properties.forEach(System::setProperty);
    try {
      return Cli.run("doctor");
    } finally {
      properties.keySet().forEach(System::clearProperty);
    }
  }

  @Test
  void itExitsZeroOrOneWithTheFix() {
    Cli.Run r = doctor(Map.of());
    assertTrue(r.exit() == 0 || r.exit() == 1, r.all());
    if (r.exit() == 1) {
      assertTrue(r.out().contains("fix"), "exit 1 comes with the fix\n" + r.all());
    }
    assertTrue(r.out().contains("fake"), "lists the backends on the class path\n" + r.all());
  }

  @Test
  void aBadSettingIsAProblemNamingTheVariableAndTheFix() {
    Cli.Run r = doctor(Map.of("mpibuild.chunkBytes", "banana"));
    assertEquals(1, r.exit(), r.all());
    assertTrue(r.out().contains("MPI_BUILD_CHUNK_BYTES") && r.out().contains("banana"), r.all());
    assertTrue(r.out().contains("fix"), r.all());
  }

  @Test
  void aBackendAskedForThatDoesNotExistIsAProblemNamingIt() {
    Cli.Run r = doctor(Map.of("mpibuild.backend", "no-such-backend"));
    assertEquals(1, r.exit(), r.all());
    assertTrue(r.out().contains("no-such-backend") && r.out().contains("fix"), r.all());
  }

  @Test
  void aCacheOthersMayWriteIsAProblemNamingTheDirectory() throws Exception {
    Path cache = tmp.resolve("cache");
    try (MpiBuild b = MpiBuild.builder().local().backend(new FakeBackend()).cacheDirectory(cache).build();
         Kernel k = b.mpiBuildKernel("__kernel void k() {}", 0)) {
      assertTrue(k.stats().obtainNanos() >= 0);
    }
    java.nio.file.Files.setPosixFilePermissions(cache, PosixFilePermissions.fromString("rwxrwxrwx"));
    Cli.Run r = doctor(Map.of("mpibuild.cache", "on", "mpibuild.cache.dir", cache.toString(), "mpibuild.backend", "fake"));
    assertEquals(1, r.exit(), r.all());
    assertTrue(r.out().contains(cache.toString()) && r.out().contains("fix"), r.all());
  }

  @Test
  void itSaysWhichPersistentCollectivesTheBindingInUseHas() {
    Cli.Run r = doctor(Map.of());
    assertTrue(r.out().lines().anyMatch(l -> l.startsWith("  persistent collectives: ")), r.all());
  }

  @Test
  void thePersistentCollectivesAreTakenOutOfTheBindingsDescription() {
    String ffm = "Open MPI v4.1.4 (libmpi.so.40), driven with Open MPI's own ABI (implementation tables); persistent "
        + "collectives: MPIX_Bcast_init and MPIX_Allreduce_init (Open MPI's pcollreq extension); why: Open MPI's "
        + "launcher; MPI_BUILD_MPI_ABI=auto";
    String[] split = DoctorCommand.persistentCollectives(ffm);
    assertEquals("Open MPI v4.1.4 (libmpi.so.40), driven with Open MPI's own ABI (implementation tables); why: Open "
        + "MPI's launcher; MPI_BUILD_MPI_ABI=auto", split[0]);
    assertEquals("MPIX_Bcast_init and MPIX_Allreduce_init (Open MPI's pcollreq extension) (FFM binding)",
        DoctorCommand.persistentLine("FFM", split));
    String[] jar = DoctorCommand.persistentCollectives("mpi.jar (/x/mpi.jar); persistent collectives: none: "
        + "non-blocking collectives (MPI_Ibcast, MPI_Iallreduce) (mpi.jar has no persistent collectives)");
    assertEquals("mpi.jar (/x/mpi.jar)", jar[0]);
    assertEquals("none: non-blocking collectives (MPI_Ibcast, MPI_Iallreduce) (mpi.jar has no persistent "
        + "collectives) (mpi.jar binding)", DoctorCommand.persistentLine("mpi.jar", jar));
    assertEquals("not said by the binding (mpi.jar binding)",
        DoctorCommand.persistentLine("mpi.jar", DoctorCommand.persistentCollectives("mpi.jar (/x/mpi.jar)")));
    assertEquals("none (no MPI binding in use)", DoctorCommand.persistentLine("FFM", null));
  }

  @Test
  void theBindingInUseIsTheOneMpiBuildBindingNames() {
    assertEquals("mpi.jar", DoctorCommand.bindingInUse("mpijava", true, true));
    assertEquals("FFM", DoctorCommand.bindingInUse("ffm", true, true));
    assertEquals("FFM, unless the program initialized MPI through mpi.jar", DoctorCommand.bindingInUse("auto", true, true));
    assertEquals("mpi.jar (the FFM binding is unavailable)", DoctorCommand.bindingInUse("auto", true, false));
    assertEquals("local mode (no binding usable)", DoctorCommand.bindingInUse("auto", false, false));
  }

  @Test
  void theLauncherIsNamedByItsMpiAndOnlyOpenMpisIsOpenMpi() {
    String hydra = "HYDRA build details:\n    Version:                                 4.0.2\n    Release Date: "
        + "Thu Apr  7 12:34:45 CDT 2022\n";
    assertEquals("mpiexec: MPICH's Hydra 4.0.2", DoctorCommand.describeLauncher("mpiexec", hydra));
    assertEquals("mpirun (Open MPI) 4.1.4", DoctorCommand.describeLauncher("mpirun",
        "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n"));
    assertTrue(DoctorCommand.isOpenMpi("mpirun (Open MPI) 4.1.4"));
    assertTrue(DoctorCommand.isOpenMpi("prterun (Open MPI) 5.0.7"));
    assertFalse(DoctorCommand.isOpenMpi(DoctorCommand.describeLauncher("mpiexec", hydra)));
    assertFalse(DoctorCommand.isOpenMpi("mpiexec: Intel(R) MPI Library for Linux* OS, Version 2021.10"));
  }
}
