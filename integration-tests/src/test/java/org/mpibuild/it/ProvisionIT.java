package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * scripts/provision away from Debian: on a PATH without dpkg, apt and Open MPI (a cluster whose MPICH the
 * administrator installed), it installs nothing, finds the MPI launcher, and writes a Maven configuration
 * that builds without mpi.jar. The script runs from a copy, so the checkout's own configuration is left alone.
 */
class ProvisionIT {
  /** What the script calls, and a launcher; dpkg-query, apt-get, ompi_info and mpirun stay out. */
  static final List<String> TOOLS = List.of("bash", "env", "sed", "grep", "ls", "cat", "head", "printf", "mkdir", "id",
      "dirname", "readlink", "ldconfig", "cmp", "sort", "cut", "tr", "basename", "tee", "wc", "awk", "rm", "cp", "mv",
      "java", "mvn");
  static final Set<String> DEBIAN_AND_OPEN_MPI = Set.of("dpkg-query", "apt-get", "ompi_info", "mpirun");

  @Test
  void awayFromDebianItInstallsNothingAndConfiguresABuildWithoutMpiJar(@TempDir Path dir) throws Exception {
    Path bin = Files.createDirectories(dir.resolve("bin"));
    for (String tool : TOOLS) {
      Path found = which(tool);
      if (found != null) {
        Files.createSymbolicLink(bin.resolve(tool), found);
      }
    }
    Path mpiexec = which("mpiexec.mpich");
    org.junit.jupiter.api.Assumptions.assumeTrue(mpiexec != null, "no MPICH (mpiexec.mpich) here to stand for the cluster's MPI");
    Files.createSymbolicLink(bin.resolve("mpiexec"), mpiexec);
    Path repo = Files.createDirectories(dir.resolve("repo/scripts"));
    Files.copy(Mpirun.REPO.resolve("scripts/provision"), repo.resolve("provision"));
    repo.resolve("provision").toFile().setExecutable(true);
    for (String absent : DEBIAN_AND_OPEN_MPI) {
      assertFalse(Files.exists(bin.resolve(absent)), absent);
    }
    Commands.Run r = Commands.run(dir, Map.of("PATH", bin.toString(), "MPI_BUILD_MPI_JAR", ""), 120,
        List.of(bin.resolve("bash").toString(), repo.resolve("provision").toString()));
    System.out.println("ProvisionIT: away from Debian:\n" + r.out());
    assertEquals(0, r.exit(), r.out());
    assertTrue(r.out().contains("not a Debian system: installing nothing"), r.out());
    assertTrue(r.out().contains("no Open MPI (ompi_info) here"), r.out());
    String config = Files.readString(dir.resolve("repo/.mvn/maven.config"));
    assertFalse(config.contains("-Dmpi.version"), "a build without mpi.jar: " + config);
  }

  static Path which(String tool) {
    for (String d : System.getenv().getOrDefault("PATH", "").split(":")) {
      Path p = Path.of(d, tool);
      if (!d.isEmpty() && Files.isExecutable(p)) {
        return p;
      }
    }
    return null;
  }
}
