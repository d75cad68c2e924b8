package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.Network;
import org.testcontainers.containers.startupcheck.OneShotStartupCheckStrategy;
import org.testcontainers.images.builder.ImageFromDockerfile;

/**
 * The Docker image, through Testcontainers: built from docker/Dockerfile, then a 4-rank collective build in
 * one container, and 2 ranks in each of 2 containers launched by mpirun over ssh on a private network.
 * Without a Docker engine (as on the CI machines) every test is skipped, printing why.
 */
class DockerIT {
  private static ImageFromDockerfile image;
  private static String noDocker;

  @BeforeAll
  static void findDocker() {
    boolean available;
    try {
      available = DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      available = false;
    }
    if (!available) {
      noDocker = "no Docker engine reachable (docker info fails); the image tests need one";
      return;
    }
    image = new ImageFromDockerfile("mpi-build-it", false).withFileFromPath(".", Mpirun.REPO)
        .withDockerfilePath("docker/Dockerfile");
  }

  /** Each test is skipped, and counted as skipped, without an engine. */
  @BeforeEach
  void needsDocker(org.junit.jupiter.api.TestInfo test) {
    if (noDocker != null) {
      System.out.println("DockerIT: " + test.getDisplayName() + " skipped: " + noDocker);
      Assumptions.abort(noDocker);
    }
  }

  static String runToCompletion(GenericContainer<?> c) {
    c.withStartupCheckStrategy(new OneShotStartupCheckStrategy().withTimeout(Duration.ofMinutes(10)));
    c.start();
    try {
      return c.getLogs();
    } finally {
      c.stop();
    }
  }

  @Test
  void theImageRunsTheDemoWithFourRanksInOneContainer() {
    try (GenericContainer<?> node = new GenericContainer<>(image).withCommand("make", "demo")) {
      String logs = runToCompletion(node);
      assertTrue(logs.contains("summary: ranks=4 compiles=1 loaded=4 verified=4 backend=opencl"), logs);
    }
  }

  @Test
  void mpirunSpansTwoContainersWithTwoRanksEach() {
    try (Network network = Network.newNetwork();
        GenericContainer<?> node2 = new GenericContainer<>(image).withNetwork(network).withNetworkAliases("node2")
            .withCommand("/usr/sbin/sshd", "-D", "-e", "-f", "/etc/mpi-build/sshd_config");
        GenericContainer<?> node1 = new GenericContainer<>(image).withNetwork(network).withNetworkAliases("node1")
            .withCommand("bash", "-c", String.join(" && ", List.of(
                "/usr/sbin/sshd -f /etc/mpi-build/sshd_config",
                "for i in $(seq 30); do ssh node2 true && break; sleep 1; done",
                "MPIRUN_ARGS='--hostfile /etc/mpi-build/hostfile --mca plm_rsh_agent ssh' bin/mpi-build demo -np 4")))) {
      node2.start();
      String logs = runToCompletion(node1);
      assertTrue(logs.contains("summary: ranks=4 compiles=1 loaded=4 verified=4 backend=opencl"), logs);
    }
  }
}
