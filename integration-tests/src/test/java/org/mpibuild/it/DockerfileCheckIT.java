package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * What CI can check of the image without a Docker engine: the Dockerfile provisions only through the
 * shared script (which make test has just run on this host) and scripts/cluster-setup, which runs here
 * into a scratch directory; a Dockerfile linter from the npm registry (dockerfilelint) when npm is here.
 */
class DockerfileCheckIT {
  static Commands.Run run(Path dir, long seconds, String... cmd) throws IOException, InterruptedException {
    return Commands.run(dir, Map.of(), seconds, List.of(cmd));
  }

  @Test
  void theDockerfileProvisionsOnlyThroughTheSharedScripts() throws IOException {
    List<String> runs = new ArrayList<>();
    StringBuilder current = null;
    for (String line : Files.readAllLines(Mpirun.REPO.resolve("docker/Dockerfile"))) {
      String t = line.trim();
      if (t.startsWith("RUN ")) {
        current = new StringBuilder(t.substring(4));
      } else if (current != null) {
        current.append(' ').append(t);
      }
      if (current != null && !t.endsWith("\\")) {
        runs.add(current.toString().replace("\\", " ").replaceAll("\\s+", " "));
        current = null;
      }
    }
    assertEquals(2, runs.size(), runs.toString());
    assertTrue(runs.get(0).startsWith("apt-get update && apt-get install -y --no-install-recommends ca-certificates make"),
        "the first step only installs what the script needs to start: " + runs.get(0));
    assertEquals("scripts/provision && scripts/cluster-setup /etc/mpi-build && rm -rf /var/lib/apt/lists/*",
        runs.get(1), "everything else goes through the shared scripts (provision in its runtime mode)");
  }

  @Test
  void clusterSetupPreparesKeysSshdAndHostfile() throws Exception {
    Path dir = Files.createTempDirectory("cluster").resolve("etc");
    try {
      Commands.Run r = run(Mpirun.REPO, 60, Mpirun.REPO.resolve("scripts/cluster-setup").toString(), dir.toString(), "a", "b");
      assertEquals(0, r.exit(), r.out());
      assertEquals(List.of("a slots=2", "b slots=2"), Files.readAllLines(dir.resolve("hostfile")));
      assertTrue(Files.readString(dir.resolve("sshd_config")).contains("PasswordAuthentication no"));
      assertEquals(Files.readString(dir.resolve("id_ed25519.pub")), Files.readString(dir.resolve("authorized_keys")));
      assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(
          Files.getPosixFilePermissions(dir.resolve("id_ed25519"))), "the private key is private");
    } finally {
      Mpirun.delete(dir.getParent());
    }
  }

  @Test
  void dockerfilelintAcceptsTheDockerfile() throws Exception {
    Path tools = Files.createTempDirectory("dockerfilelint");
    try {
      Commands.Run install;
      try {
        install = run(tools, 180, "npm", "install", "--silent", "--no-audit", "--no-fund", "dockerfilelint@1.8.0");
      } catch (IOException e) {
        install = new Commands.Run(-1, e.getMessage());
      }
      if (install.exit() != 0) {
        String why = "dockerfilelint could not be installed from the npm registry: " + install.out().strip();
        System.out.println("DockerfileCheckIT: lint skipped: " + why);
        Assumptions.abort(why);
      }
      Commands.Run lint = run(Mpirun.REPO, 60, tools.resolve("node_modules/.bin/dockerfilelint").toString(), "docker/Dockerfile");
      assertEquals(0, lint.exit(), lint.out());
    } finally {
      Mpirun.delete(tools);
    }
  }
}
