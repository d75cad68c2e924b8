package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Some nodes cannot resolve their own hostname (a fresh debootstrap, some containers). The library's
 * identity in cache locks needs no DNS: a job in a UTS namespace whose hostname resolves nowhere takes over
 * a dead holder's lock at once and builds. Needs root and unshare(1); skipped, saying so, without them.
 */
class UnresolvableHostIT {
  @Test
  void aDeadHoldersLockIsTakenOverOnANodeWhoseNameDoesNotResolve() throws Exception {
    boolean root = "root".equals(System.getProperty("user.name"));
    boolean unshare = Files.isExecutable(Path.of("/usr/bin/unshare"));
    if (!root || !unshare) {
      System.out.println("UnresolvableHostIT: skipped: needs root and /usr/bin/unshare to make a UTS namespace");
    }
    assumeTrue(root && unshare, "needs root and unshare");
    Path dir = Files.createTempDirectory("mpi-build-nodns");
    try {
      String name = "mpi-build-unresolvable-" + ProcessHandle.current().pid();
      List<String> cmd = new ArrayList<>(List.of("unshare", "--uts", "sh", "-c",
          "hostname " + name + " && if getent hosts " + name + " >/dev/null; then echo RESOLVES; fi && exec \"$@\"",
          "sh", "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
          "-x", "MPI_BUILD_CACHE_DIR=" + dir.resolve("cache"), "-x", "MPI_BUILD_BACKEND=opencl",
          "-x", "MPI_BUILD_POCL_CACHE_ROOT=" + dir.resolve("pocl"),
          "-x", "MPI_BUILD_JAVA_OPTS=-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xmx256m",
          Mpirun.REPO.resolve("bin/mpi-build-rank").toString(), "-cp", System.getProperty("mpibuild.it.classpath"),
          "org.mpibuild.programs.Faults", "stale-lock-dead-holder"));
      if (System.getenv("MPI_BUILD_SIGNING_KEY") != null) {
        cmd.addAll(cmd.indexOf("-np"), List.of("-x", "MPI_BUILD_SIGNING_KEY=" + System.getenv("MPI_BUILD_SIGNING_KEY")));
      }
      long t0 = System.nanoTime();
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(120, TimeUnit.SECONDS), out);
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertTrue(!out.contains("RESOLVES"), "the test hostname must not resolve\n" + out);
      assertEquals(0, p.exitValue(), out);
      for (int rank = 0; rank < 2; rank++) {
        assertTrue(out.contains("FAULT case=stale-lock-dead-holder step=1 rank=" + rank + " outcome=ok"), out);
      }
      assertTrue(out.contains("is dead") && out.contains(name + "/"), "taken over as dead, by host identity\n" + out);
      assertTrue(ms < 60_000, "took " + ms + " ms");
      System.out.println("UnresolvableHostIT: dead holder's lock taken over on host " + name + " in " + ms + " ms");
    } finally {
      Mpirun.delete(dir);
    }
  }
}
