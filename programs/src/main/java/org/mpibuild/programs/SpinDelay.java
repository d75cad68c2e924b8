package org.mpibuild.programs;

/**
 * The busy delay inside a kernel, in OpenCL C: work item i runs {@code spin} steps of a linear congruential
 * generator and stores the result in {@code sink[i]}, so that no compiler drops the loop. The one definition
 * of the delay that {@link Pipeline}'s {@code advance} and {@link StreamCollectives}' {@code delay} run.
 */
final class SpinDelay {
  private SpinDelay() {}

  /**
   * The delay's statements, as lines of a kernel body joined by newlines, with no newline after the last: they
   * declare {@code int i} (the global id) and {@code uint x}, and need the kernel's parameters
   * {@code spin} (an int) and {@code sink} (a {@code __global uint*}).
   */
  static final String BODY = String.join("\n",
      "  int i = get_global_id(0);",
      "  uint x = (uint) i;",
      "  for (int k = 0; k < spin; k++) { x = x * 1103515245u + 12345u; }",
      "  sink[i] = x;");  // keeps the delay loop
}
