package org.mpibuild.testkit;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Starts jobs under Open MPI's {@code mpirun} for the modules' tests: the options every job needs here, and a
 * run with a deadline after which the job is killed with all of its processes.
 */
public final class Mpirun {
  private Mpirun() {}

  /** A finished job: mpirun's exit status and its output (every rank's, standard error included). */
  public record Job(int exitCode, String output, long millis) {}

  /**
   * Returns why no job can be started here (no {@code mpirun} on the PATH), or empty if one can.
   *
   * @return the reason, or empty
   */
  public static Optional<String> unavailable() {
    String path = System.getenv().getOrDefault("PATH", "");
    for (String dir : path.split(File.pathSeparator)) {
      if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, "mpirun"))) {
        return Optional.empty();
      }
    }
    return Optional.of("mpirun is not on the PATH (" + path + "): install Open MPI (scripts/provision)");
  }

  /**
   * Returns {@code mpirun} with the options every job of the tests needs, up to and including {@code -np N}:
   * {@code --oversubscribe} (more ranks than cores), {@code --allow-run-as-root} when run as root (as in CI),
   * and a session directory of the job's own, since jobs started together on one host otherwise race on
   * {@code /tmp/ompi.HOST.UID}. The program and its arguments follow.
   *
   * @param ranks how many ranks
   * @param sessionDirectory an empty directory for Open MPI's session files
   * @return the command's start
   */
  public static List<String> command(int ranks, Path sessionDirectory) {
    List<String> cmd = new ArrayList<>(List.of("mpirun"));
    if (isRoot()) {
      cmd.add("--allow-run-as-root");
    }
    cmd.addAll(List.of("--oversubscribe", "--mca", "orte_tmpdir_base", sessionDirectory.toString(),
        "-np", Integer.toString(ranks)));
    return cmd;
  }

  /** Whether this process runs as root (uid 0), as CI's containers do. */
  static boolean isRoot() {
    try {
      return Integer.valueOf(0).equals(Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
      return "root".equals(System.getProperty("user.name"));
    }
  }

  /**
   * Runs {@code command} to completion, its output and standard error in one file of {@code directory}. A job
   * still running after {@code timeout} is killed with all of its processes, and the run throws.
   *
   * @param command the command line, usually {@link #command} followed by a program
   * @param directory where the output goes
   * @param timeout the deadline
   * @return the finished job
   * @throws AssertionError if it did not finish in time (with its output so far) or could not start
   */
  public static Job run(List<String> command, Path directory, Duration timeout) {
    Path log = directory.resolve("mpirun.log");
    try {
      long t0 = System.nanoTime();
      Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
      if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        throw new AssertionError(String.join(" ", command) + " did not finish within " + timeout.toSeconds()
            + " s:\n" + Files.readString(log, StandardCharsets.UTF_8));
      }
      long millis = (System.nanoTime() - t0) / 1_000_000;
      return new Job(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8), millis);
    } catch (IOException e) {
      throw new AssertionError("cannot run " + command.get(0) + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while " + command.get(0) + " ran", e);
    }
  }
}
