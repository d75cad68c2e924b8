package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The release tarball ({@code make dist}) on a user's machine: a container of the runtime image, where the
 * administrator installed Open MPI, a JRE and PoCL and there is no Maven, with Debian's Lmod. An ordinary
 * user (not root) unpacks the tarball in their home and runs the demo, {@code doctor} and
 * {@code cache stats}, once by path and once through {@code module use; module load mpi-build}. Skips,
 * saying why, without a container engine.
 */
class DistIT {
  static final String IMAGE = "localhost/mpi-build-dist:it";
  private static String unavailable;
  private static String tarball;
  private static String version;

  @BeforeAll
  static void image() throws Exception {
    Commands.Run dist = Commands.run(Mpirun.REPO, Map.of(), 300, List.of("scripts/dist"));
    assertEquals(0, dist.exit(), dist.out());
    System.out.println("DistIT: " + dist.out().strip());
    version = Commands.run(Mpirun.REPO, Map.of(), 60, List.of("bin/mpi-build", "version")).out().strip()
        .replace("mpi-build ", "");
    tarball = "mpi-build-" + version + ".tar.gz";
    unavailable = RuntimeImage.ensure();
    if (unavailable != null) {
      return;
    }
    Path context = Files.createTempDirectory("mpi-build-dist-image");
    try {
      Files.copy(Mpirun.REPO.resolve("docker/dist/Containerfile"), context.resolve("Containerfile"));
      Files.copy(Mpirun.REPO.resolve("target/" + tarball), context.resolve(tarball));
      long t0 = System.nanoTime();
      RuntimeImage.build(IMAGE, context, List.of("BASE=" + RuntimeImage.IMAGE));
      System.out.println("DistIT: image " + IMAGE + " built in " + (System.nanoTime() - t0) / 1_000_000 + " ms");
    } finally {
      Mpirun.delete(context);
    }
  }

  @AfterAll
  static void done() {
    // the image goes with RuntimeImage's others when the JVM exits
  }

  @BeforeEach
  void needsAnEngine(org.junit.jupiter.api.TestInfo test) {
    if (unavailable != null) {
      System.out.println("DistIT: " + test.getDisplayName() + " skipped: " + unavailable);
      Assumptions.abort(unavailable);
    }
  }

  /** Runs a login shell script as the image's user (hpcuser) in a fresh container; returns its output. */
  static String asUser(String script) throws Exception {
    return RuntimeImage.run(List.of("docker", "run", "--rm", "--network", "none", IMAGE, "bash", "-lc",
        "set -euo pipefail; " + script), 600);
  }

  @Test
  void anOrdinaryUserUnpacksItAndRunsTheDemoDoctorAndCacheStats() throws Exception {
    String out = asUser("test \"$(id -u)\" -ne 0; ! command -v mvn; tar xzf " + tarball + "; "
        + "r=$HOME/mpi-build-" + version + "/bin/mpi-build; $r --version; $r demo -np 2; $r doctor; $r cache stats");
    System.out.println("DistIT: unpacked by hpcuser, no Maven:\n" + out);
    assertTrue(out.contains("mpi-build " + version), out);
    assertTrue(out.contains("summary: ranks=2 compiles=1 loaded=2 verified=2"), out);
    assertTrue(out.contains("doctor: everything needed is here"), out);
    assertTrue(out.contains("/home/hpcuser/.cache/mpi-build"), "the user's own cache: " + out);
  }

  @Test
  void lmodLoadsItsModulefile() throws Exception {
    String out = asUser("tar xzf " + tarball + "; module use $HOME/mpi-build-" + version + "/share/modulefiles; "
        + "module load mpi-build; module list 2>&1; echo \"MPI_BUILD_HOME=$MPI_BUILD_HOME\"; "
        + "command -v mpi-build; mpi-build --version; mpi-build demo -np 2; mpi-build doctor; mpi-build cache stats");
    System.out.println("DistIT: module load mpi-build (Lmod):\n" + out);
    assertTrue(out.contains("mpi-build/" + version), "module list names it: " + out);
    assertTrue(out.contains("MPI_BUILD_HOME=/home/hpcuser/mpi-build-" + version), out);
    assertTrue(out.contains("/home/hpcuser/mpi-build-" + version + "/bin/mpi-build"), "the module's is first: " + out);
    assertTrue(out.contains("summary: ranks=2 compiles=1 loaded=2 verified=2"), out);
    assertTrue(out.contains("doctor: everything needed is here"), out);
  }
}
