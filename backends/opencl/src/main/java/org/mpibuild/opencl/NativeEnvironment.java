package org.mpibuild.opencl;

/**
 * This process's C environment, changed through the C library's {@code setenv}, for a library that reads a variable
 * with {@code getenv} each time it needs it (PoCL 6.0 and later). Java calls it through its FFM API, from Java 22 on,
 * where the JVM allows native access: the implementation, {@code NativeSetenv}, is compiled for Java 22 and loaded
 * only there ({@link Java22Classes}).
 *
 * <p>{@code setenv} is not thread-safe against a concurrent {@code getenv} in every C library (glibc before 2.40
 * moves the array of variables when one is added, while another thread may read it): callers hold {@link #LOCK}
 * around a change and the library call that reads it, and never remove the variable, so that it is added once.
 */
interface NativeEnvironment {
  /** Held around a change of the environment and the library call that reads it. */
  Object LOCK = new Object();

  /**
   * {@code setenv(name, value, 1)}.
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
    static final Object CHOICE = Java22Classes.open("NativeSetenv");

    private Loader() {}
  }
}
