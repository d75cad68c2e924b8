package org.mpibuild.spi;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** Small helpers that every backend needs, written once. */
public final class BackendSupport {
  private BackendSupport() {}

  /**
   * Returns an exception's type and the first line of its message, for one-line reports such as
   * "the backend cannot run here: UnsatisfiedLinkError: ...".
   *
   * @param e the exception
   * @return {@code SimpleName: first line}
   */
  public static String firstLine(Throwable e) {
    String m = String.valueOf(e.getMessage());
    int nl = m.indexOf('\n');
    return e.getClass().getSimpleName() + ": " + (nl < 0 ? m : m.substring(0, nl));
  }

  /**
   * Deletes a private temporary directory and everything in it, deepest first. Symbolic links are removed,
   * never followed.
   *
   * @param dir the directory; nothing happens if it is null or absent
   * @throws IOException if it cannot be listed
   */
  public static void deleteTree(Path dir) throws IOException {
    if (dir == null || !Files.exists(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (Stream<Path> s = Files.walk(dir)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
