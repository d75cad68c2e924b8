package org.mpibuild.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * This process's CPU time, and that of its children that have ended: the OpenCL backend compiles a request
 * with launch shapes in a child JVM (PoCL), whose CPU the JVM's own counter does not see.
 */
final class Cpu {
  /** Linux's USER_HZ, the unit of {@code /proc/<pid>/stat}'s times: 100 on every Linux ABI this runs on. */
  static final long TICKS_PER_SECOND = 100;

  private Cpu() {}

  /** This process's CPU time plus its waited-for children's, in ns. */
  static long nanos() {
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    long children = 0;
    try {
      children = childrenNanos(Files.readString(Path.of("/proc/self/stat")));
    } catch (IOException | RuntimeException e) {
      // no /proc: children's CPU is not counted
    }
    return os.getProcessCpuTime() + children;
  }

  /**
   * {@link #nanos()}, plus what the children that have not ended have used so far (their {@code /proc/<pid>/stat}
   * utime + stime, each read once): a process the library started and still keeps (a compile process started ahead,
   * waiting for a compile that the job will not ask for) is the job's CPU time as far as it ran.
   */
  static long nanosWithLiveChildren() {
    long live = ProcessHandle.current().descendants().mapToLong(p -> {
      try {
        return ownNanos(Files.readString(Path.of("/proc", Long.toString(p.pid()), "stat")));
      } catch (IOException | RuntimeException e) {
        return 0; // it ended meanwhile: counted in cutime where this process waited for it
      }
    }).sum();
    return nanos() + live;
  }

  /** utime + stime (fields 14 and 15 of {@code /proc/<pid>/stat}), in ns. */
  static long ownNanos(String stat) {
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" +");
    return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * (1_000_000_000L / TICKS_PER_SECOND);
  }

  /**
   * cutime + cstime (fields 16 and 17 of {@code /proc/<pid>/stat}, counted after the command name, which
   * may hold spaces and parentheses), in ns.
   */
  static long childrenNanos(String stat) {
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" +");
    // f[0] is field 3 (state), so field k is f[k - 3]
    return (Long.parseLong(f[13]) + Long.parseLong(f[14])) * (1_000_000_000L / TICKS_PER_SECOND);
  }
}
