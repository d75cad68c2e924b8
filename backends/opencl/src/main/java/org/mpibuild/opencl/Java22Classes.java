package org.mpibuild.opencl;

/**
 * Loads a class of this backend compiled for Java 22 ({@code src/main/java22}: the FFM API) by name, only on a JVM
 * that has it: {@link QueueCommands}' native kernels and {@link NativeEnvironment}'s {@code setenv}.
 */
final class Java22Classes {
  private Java22Classes() {}

  /**
   * What {@code open()} of class {@code name} returns (its instance, or a String saying why there is none), or a
   * String saying why it could not be called: a JVM before 22, a class that did not load.
   */
  static Object open(String name) {
    if (Runtime.version().feature() < 22) {
      return "Java " + Runtime.version().feature() + " has no FFM API (Java 22 or later does)";
    }
    try {
      return Class.forName("org.mpibuild.opencl." + name).getMethod("open").invoke(null);
    } catch (ReflectiveOperationException | LinkageError e) {
      return name + " did not load: " + e;
    }
  }
}
