package org.mpibuild.it;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.testcontainers.DockerClientFactory;

/**
 * The runtime image (docker/Dockerfile, staged from this build by scripts/image-context) that the container
 * tests run: built once per test JVM, by whichever test needs it first (DockerIT, SlurmIT), and removed, with
 * the images built on it, when the JVM exits.
 */
final class RuntimeImage {
  static final String IMAGE = "localhost/mpi-build:it";
  private static final List<String> toRemove = new ArrayList<>();
  private static String problem;
  private static boolean ready;

  private RuntimeImage() {}

  /** Why no container engine can be used here, or null when one answers. */
  static String engineMissing() {
    boolean available;
    try {
      available = DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      available = false;
    }
    return available ? null : "no container engine reachable (DOCKER_HOST=" + System.getenv("DOCKER_HOST")
        + "); scripts/container-engine sets one up";
  }

  /** Builds the image unless built already; returns why it cannot be, or null when it is there. */
  static synchronized String ensure() throws Exception {
    if (ready || problem != null) {
      return problem;
    }
    problem = engineMissing();
    if (problem != null) {
      return problem;
    }
    Path context = Files.createTempDirectory("mpi-build-image");
    try {
      run(List.of(Mpirun.REPO.resolve("scripts/image-context").toString(), context.toString()), 120);
      String base = System.getenv().getOrDefault("MPI_BUILD_BASE_IMAGE", "debian:12-slim");
      int colon = base.lastIndexOf(':');
      long t0 = System.nanoTime();
      build(IMAGE, context, List.of("BASE=" + base.substring(0, colon), "BASE_TAG=" + base.substring(colon + 1)));
      System.out.println("RuntimeImage: " + IMAGE + " built from " + base + " in "
          + (System.nanoTime() - t0) / 1_000_000 + " ms");
      ready = true;
      return null;
    } finally {
      Mpirun.delete(context);
    }
  }

  /** Builds {@code tag} from {@code context} with build arguments, and removes it when the JVM exits. */
  static synchronized void build(String tag, Path context, List<String> buildArgs) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("docker", "build", "-q"));
    if (Files.exists(context.resolve("Containerfile")) && !Files.exists(context.resolve("Dockerfile"))) {
      cmd.addAll(List.of("-f", context.resolve("Containerfile").toString()));
    }
    buildArgs.forEach(a -> cmd.addAll(List.of("--build-arg", a)));
    cmd.addAll(List.of("-t", tag, context.toString()));
    run(cmd, 900);
    if (toRemove.isEmpty()) {
      Runtime.getRuntime().addShutdownHook(new Thread(RuntimeImage::removeAll, "remove-test-images"));
    }
    toRemove.add(0, tag); // images built on others go first
  }

  private static synchronized void removeAll() {
    for (String tag : toRemove) {
      try {
        run(List.of("docker", "image", "rm", "-f", tag), 120);
      } catch (Exception | AssertionError e) {
        System.err.println("RuntimeImage: could not remove " + tag + ": " + e.getMessage());
      }
    }
  }

  /** Runs a command; fails with its output unless it exits 0 within the time. */
  static String run(List<String> cmd, long seconds) throws Exception {
    Path log = Files.createTempFile("mpi-build-image", ".log");
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
      boolean done = p.waitFor(seconds, TimeUnit.SECONDS);
      if (!done) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
      }
      String out = Files.readString(log, StandardCharsets.UTF_8);
      if (!done || p.exitValue() != 0) {
        throw new AssertionError(String.join(" ", cmd) + (done ? " failed" : " did not finish in " + seconds + " s")
            + ":\n" + out);
      }
      return out;
    } finally {
      Files.deleteIfExists(log);
    }
  }
}
