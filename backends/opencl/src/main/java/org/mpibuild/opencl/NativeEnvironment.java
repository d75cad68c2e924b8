package org.mpibuild.opencl;

import java.util.function.Supplier;

/**
 * This process's C environment, changed after the process started, for a library that reads a variable with
 * {@code getenv} (PoCL). Two ways, the first that this process has:
 * <ul>
 *   <li>the C library's {@code setenv}, through Java's FFM API, from Java 22 on, where the JVM allows native access:
 *       the implementation, {@code NativeSetenv}, is compiled for Java 22 and loaded only there
 *       ({@link Java22Classes});</li>
 *   <li>an environment slot the process was started with ({@link EnvironmentSlot}: {@code bin/mpi-build-rank} gives
 *       each rank one), written in place through {@code /proc/self/mem}, on any Java.</li>
 * </ul>
 *
 * <p>{@code setenv} is not thread-safe against a concurrent {@code getenv} in every C library (glibc before 2.40
 * moves the array of variables when one is added, while another thread may read it): callers hold {@link #LOCK}
 * around a change and the library call that reads it, and {@link #reset} never removes a variable that
 * {@code setenv} added, so that it is added once.
 */
interface NativeEnvironment {
  /** Held around a change of the environment and the library call that reads it. */
  Object LOCK = new Object();

  /**
   * Sets {@code name} to {@code value}.
   *
   * @throws IllegalStateException if it could not be set (nothing changed)
   */
  void set(String name, String value);

  /**
   * Takes {@code name} back to what a library reads as unset where its default is the empty string: empty through
   * {@code setenv}, gone through the slot.
   *
   * @throws IllegalStateException if it could not be
   */
  void reset(String name);

  /** This JVM's, or null where there is none ({@link #unavailable} says why). */
  static NativeEnvironment get() {
    return Loader.CHOICE instanceof NativeEnvironment n ? n : null;
  }

  /** Why this JVM cannot change its C environment; null where it can. */
  static String unavailable() {
    return Loader.CHOICE instanceof String why ? why : null;
  }

  /** The environment slot's way. */
  NativeEnvironment SLOT = new NativeEnvironment() {
    @Override
    public void set(String name, String value) {
      String problem = EnvironmentSlot.set(name, value);
      if (problem != null) {
        throw new IllegalStateException(problem);
      }
    }

    /** The slot back, whatever variable it holds: it holds one at a time. */
    @Override
    public void reset(String name) {
      String problem = EnvironmentSlot.restore();
      if (problem != null) {
        throw new IllegalStateException(problem);
      }
    }
  };

  /**
   * {@code setenv}, an instance or why there is none, where it is one; else the slot, where {@code slotProblem} gives
   * none (it is asked only then); else why neither.
   */
  static Object choose(Object setenv, Supplier<String> slotProblem) {
    if (setenv instanceof NativeEnvironment) {
      return setenv;
    }
    String slot = slotProblem.get();
    return slot == null ? SLOT : setenv + "; and " + slot;
  }

  /** Chooses once. */
  final class Loader {
    static final Object CHOICE = choose(Java22Classes.open("NativeSetenv"),
        () -> EnvironmentSlot.problem(System.getenv()));

    private Loader() {}
  }
}
