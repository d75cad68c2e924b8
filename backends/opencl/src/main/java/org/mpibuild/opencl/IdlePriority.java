package org.mpibuild.opencl;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * How a process that makes something nobody waits for runs: at the idle priority, so that it takes only the
 * time the program leaves unused, even on the one core an MPI launcher may bind a rank to. Linux's
 * {@code SCHED_IDLE} through util-linux's {@code chrt --idle 0}, where the system allows it; else the lowest
 * nice value through coreutils' {@code nice -n 19}; else the normal priority. The command is a prefix of the
 * process's argument list (nothing runs through a shell), found once per JVM in the system's own directories.
 */
final class IdlePriority {
  private static final List<String> DIRECTORIES = List.of("/usr/bin", "/bin");
  private static volatile List<String> prefix;

  private IdlePriority() {}

  /** The prefix that runs a command at the idle priority: empty where there is none. */
  static List<String> prefix() {
    List<String> p = prefix;
    if (p == null) {
      p = find(DIRECTORIES);
      prefix = p;
    }
    return p;
  }

  /** What {@link #prefix} finds in {@code directories}: {@code chrt} if it works here, else {@code nice}. */
  static List<String> find(List<String> directories) {
    Path chrt = executable(directories, "chrt");
    Path trueCommand = executable(directories, "true");
    if (chrt != null && trueCommand != null
        && runs(List.of(chrt.toString(), "--idle", "0", trueCommand.toString()))) {
      return List.of(chrt.toString(), "--idle", "0");
    }
    Path nice = executable(directories, "nice");
    return nice == null ? List.of() : List.of(nice.toString(), "-n", "19");
  }

  private static Path executable(List<String> directories, String name) {
    for (String d : directories) {
      Path p = Path.of(d, name);
      if (Files.isRegularFile(p) && Files.isExecutable(p)) {
        return p;
      }
    }
    return null;
  }

  /** Whether {@code command} exits 0 within 5 s (a policy the system refuses makes {@code chrt} exit 1). */
  private static boolean runs(List<String> command) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      p.getOutputStream().close();
      if (!p.waitFor(5, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return false;
      }
      return p.exitValue() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
