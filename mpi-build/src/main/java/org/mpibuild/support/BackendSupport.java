package org.mpibuild.support;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
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
   * Waits for a compiler process a backend started. If the waiting thread is interrupted (the compile
   * timeout abandons the compile), the process and its children are killed and briefly waited for, so that
   * nothing still writes into a directory the caller is about to remove.
   *
   * @param process the process
   * @param what the process as a message names it, for example {@code "nvcc"}
   * @return the exit status
   * @throws IllegalStateException "WHAT was interrupted (compile timeout) and killed", with the interrupt
   *     status set again
   */
  public static int awaitOrKill(Process process, String what) {
    try {
      return process.waitFor();
    } catch (InterruptedException e) {
      process.descendants().forEach(ProcessHandle::destroyForcibly);
      process.destroyForcibly();
      try {
        process.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException again) {
        // interrupted twice: give up waiting
      }
      Thread.currentThread().interrupt();
      throw new IllegalStateException(what + " was interrupted (compile timeout) and killed", e);
    }
  }

  /**
   * Deletes a private temporary directory and everything in it, deepest first. Symbolic links are removed,
   * never followed.
   *
   * @param dir the directory; nothing happens if it is null or absent
   * @throws IOException if it cannot be listed
   */
  public static void deleteTree(Path dir) throws IOException {
    if (dir == null || !Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (Stream<Path> s = Files.walk(dir)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
