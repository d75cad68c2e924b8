package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Messages that name the real cause of a failure, where the first thing to fail says something else. */
class RealCauseIT {
  /** PoCL shows no device when it cannot create its cache directory, and says nothing about it. */
  @Test
  void aPoclCacheDirectoryThatCannotBeCreatedIsNamedNotJustTheMissingDevice(@TempDir Path dir) throws Exception {
    Path file = Files.writeString(dir.resolve("a-file"), "not a directory");
    Path cache = file.resolve("pocl");
    Commands.Run r = Commands.run(Mpirun.REPO, Map.of("POCL_CACHE_DIR", cache.toString()), 60,
        List.of(Mpirun.REPO.resolve("bin/mpi-build").toString(), "doctor"));
    assertEquals(1, r.exit(), r.out());
    assertTrue(r.out().contains("opencl: OpenCL backend unavailable: no OpenCL device on any platform: PoCL cannot "
        + "create its cache directory " + cache + " (from POCL_CACHE_DIR): " + file + " is not a directory"), r.out());
  }
}
