package org.mpibuild.internal.startup;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How many processors this node has online, whatever this process is bound to: a rank that {@code mpirun} binds
 * to one core sees one through {@link Runtime#availableProcessors}, which says nothing about its neighbours'.
 */
public final class NodeCores {
  private static final Path ONLINE = Path.of("/sys/devices/system/cpu/online");

  private NodeCores() {}

  /** The node's online processors ({@code /sys/devices/system/cpu/online}), else this process's. */
  public static int online() {
    try {
      return count(Files.readString(ONLINE));
    } catch (IOException | RuntimeException e) {
      return Runtime.getRuntime().availableProcessors();
    }
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
