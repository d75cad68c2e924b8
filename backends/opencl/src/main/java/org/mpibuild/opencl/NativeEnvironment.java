package org.mpibuild.opencl;

/**
 * This process's C environment, changed through the C library's {@code setenv} and {@code unsetenv}, for a library
 * that reads a variable with {@code getenv} each time it needs it (PoCL 6.0 and later). Java calls them through its
 * FFM API, from Java 22 on, where the JVM allows native access: the implementation, {@code NativeSetenv}, is compiled
 * for Java 22 and loaded only there ({@link QueueCommands} is loaded the same way).
 *
 * <p>{@code setenv} is not thread-safe against a concurrent {@code getenv} in every C library (glibc before 2.40 may
 * move the array of variables while another thread reads it): callers hold {@link #LOCK} around a change and the
 * library call that reads it, and remove the variable right after.
 */
interface NativeEnvironment {
  /** Held around a change of the environment and the library call that reads it. */
  Object LOCK = new Object();

  /**
   * {@code setenv(name, value, 1)}, or {@code unsetenv(name)} where {@code value} is null.
   *
   * @throws IllegalStateException if the C library refused
   */
  void set(String name, String value);

  /** This JVM's, or null where there is none ({@link #unavailable} says why). */
  static NativeEnvironment get() {
    return Loader.CHOICE instanceof NativeEnvironment n ? n : null;
  }

  /** Why this JVM cannot change its C environment; null where it can. */
  static String unavailable() {
    return Loader.CHOICE instanceof String why ? why : null;
  }

  /** Loads the Java 22 implementation once, where it can run. */
  final class Loader {
    static final Object CHOICE = load();

    private Loader() {}

    private static Object load() {
      if (Runtime.version().feature() < 22) {
        return "Java " + Runtime.version().feature() + " has no FFM API to call setenv (Java 22 or later does)";
      }
      try {
        return Class.forName("org.mpibuild.opencl.NativeSetenv").getMethod("open").invoke(null);
      } catch (ReflectiveOperationException | LinkageError e) {
        return "the FFM setenv did not load: " + e;
      }
    }
  }
}
