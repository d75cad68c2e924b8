package org.mpibuild.internal.startup;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * How many processors the ranks of this node may share, whatever this process is bound to: a rank that
 * {@code mpirun} binds to one core sees one through {@link Runtime#availableProcessors}, which says nothing about
 * its neighbours'. The processors of this process's cpuset (cgroup v2 or v1: what Slurm and containers confine a
 * job to), else the node's online ones.
 */
public final class NodeCores {
  private static final Path ONLINE = Path.of("/sys/devices/system/cpu/online");
  private static final Path CGROUPS = Path.of("/sys/fs/cgroup");

  private NodeCores() {}

  /** The processors of this process's cpuset, else the node's online ones, else this process's. */
  public static int online() {
    try {
      for (Path list : cpusets(Files.readAllLines(Path.of("/proc/self/cgroup")))) {
        if (Files.isRegularFile(list) && !Files.readString(list).isBlank()) {
          return count(Files.readString(list));
        }
      }
    } catch (IOException | RuntimeException e) {
      // no cgroups to read: the node's processors
    }
    try {
      return count(Files.readString(ONLINE));
    } catch (IOException | RuntimeException e) {
      return Runtime.getRuntime().availableProcessors();
    }
  }

  /** Where the cpuset of the cgroups in {@code /proc/self/cgroup}'s lines lists its processors: v2, then v1. */
  static List<Path> cpusets(List<String> cgroupLines) {
    Path v2 = null;
    Path v1 = null;
    for (String line : cgroupLines) {
      String[] f = line.split(":", 3);
      if (f.length < 3 || !f[2].startsWith("/")) {
        continue;
      }
      String path = f[2].substring(1);
      if (f[0].equals("0") && f[1].isEmpty()) {
        v2 = CGROUPS.resolve(path).resolve("cpuset.cpus.effective");
      } else if (List.of(f[1].split(",")).contains("cpuset")) {
        v1 = CGROUPS.resolve("cpuset").resolve(path).resolve("cpuset.effective_cpus");
      }
    }
    return java.util.stream.Stream.of(v2, v1).filter(java.util.Objects::nonNull).toList();
  }

  /**
   * The processors of a kernel CPU list such as {@code 0-3,8-11} or {@code 0}.
   *
   * @throws IllegalArgumentException if {@code list} is not one
   */
  static int count(String list) {
    int n = 0;
    for (String range : list.strip().split(",")) {
      int dash = range.indexOf('-');
      int from = Integer.parseInt(dash < 0 ? range : range.substring(0, dash));
      int to = dash < 0 ? from : Integer.parseInt(range.substring(dash + 1));
      if (from < 0 || to < from) {
        throw new IllegalArgumentException("not a CPU list: '" + list.strip() + "'");
      }
      n += to - from + 1;
    }
    return n;
  }
}
