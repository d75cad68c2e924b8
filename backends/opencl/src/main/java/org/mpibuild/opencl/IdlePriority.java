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

  private static volatile List<String> anyCore;

  /**
   * A prefix that runs a command on any processor the process's cgroup allows rather than only those it inherits:
   * util-linux's {@code taskset} with every processor, which the kernel narrows to the cgroup's cpuset (a Slurm
   * job's cores on the node); empty where {@code taskset} is missing or refused. Work at the idle priority then
   * takes idle time wherever it is, not only on the one core a launcher bound the rank to.
   */
  static List<String> anyCore() {
    List<String> p = anyCore;
    if (p == null) {
      p = anyCore(DIRECTORIES);
      anyCore = p;
    }
    return p;
  }

  /** {@code taskset -c 0-4095}, where {@code taskset} is in {@code directories} and works here; else empty. */
  static List<String> anyCore(List<String> directories) {
    Path taskset = executable(directories, "taskset");
    Path trueCommand = executable(directories, "true");
    List<String> every = taskset == null ? List.of() : List.of(taskset.toString(), "-c", "0-4095");
    return taskset != null && trueCommand != null && runs(concat(every, List.of(trueCommand.toString()))) ? every
        : List.of();
  }

  /**
   * Puts the calling thread alone at the idle priority (Linux keeps the policy and the nice value per thread):
   * {@code chrt --idle -p 0} on its id where {@link #prefix} found {@code chrt}, else {@code renice -n 19 -p}. An
   * unprivileged thread cannot come back, so the threads it starts afterwards are idle too; the others are not.
   *
   * @return whether it is at the idle priority now
   */
  static boolean lowerThisThread() {
    List<String> p = prefix();
    if (p.isEmpty()) {
      return false;
    }
    String tid = threadId();
    Path renice = executable(DIRECTORIES, "renice");
    if (tid == null) {
      return false;
    }
    if (p.get(0).endsWith("chrt")) {
      return runs(List.of(p.get(0), "--idle", "-p", "0", tid));
    }
    return renice != null && runs(List.of(renice.toString(), "-n", "19", "-p", tid));
  }

  /**
   * Binds the calling thread alone to {@code cpus} (a list as {@code Cpus_allowed_list} writes it) through
   * {@code taskset -p}; false where that did not work (it then runs where it did).
   */
  static boolean bindThisThread(String cpus) {
    Path taskset = executable(DIRECTORIES, "taskset");
    String tid = threadId();
    return taskset != null && tid != null && cpus.matches("[0-9,-]+")
        && runs(List.of(taskset.toString(), "-p", "-c", cpus, tid));
  }

  /** The processors the calling thread may run on, as {@code /proc/thread-self/status} lists them; null if unknown. */
  static String processorsOfThisThread() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/thread-self/status"))) {
        if (line.startsWith("Cpus_allowed_list:")) {
          return line.substring("Cpus_allowed_list:".length()).strip();
        }
      }
    } catch (IOException | RuntimeException e) {
      // not Linux 3.17 or later: unknown
    }
    return null;
  }

  /** The calling thread's id in the kernel: the last name of {@code /proc/thread-self}; null where there is none. */
  private static String threadId() {
    try {
      return Files.readSymbolicLink(Path.of("/proc/thread-self")).getFileName().toString();
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> out = new java.util.ArrayList<>(a);
    out.addAll(b);
    return List.copyOf(out);
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
