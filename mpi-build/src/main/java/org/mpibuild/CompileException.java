package org.mpibuild;

/**
 * The compiler rejected the kernel source. In a collective build, every rank throws this exception
 * with the compiler's build log, as the root received it.
 */
public class CompileException extends KernelBuildException {
  private static final long serialVersionUID = 1L;
  /** What the compiler printed. */
  private final String buildLog;
  /** Why the compile failed, without the log. */
  private final String reason;

  /**
   * Creates a compile failure.
   *
   * @param message what failed, for example the OpenCL error code
   * @param buildLog what the compiler printed; empty if it printed nothing
   */
  public CompileException(String message, String buildLog) {
    super(message + (buildLog == null || buildLog.isBlank() ? "" : "\n--- build log ---\n" + buildLog.strip()));
    this.buildLog = buildLog == null ? "" : buildLog;
    this.reason = message;
  }

  /**
   * Returns what failed, without the build log that {@link #getMessage()} appends.
   *
   * @return the reason, for example the OpenCL error code
   */
  public String reason() {
    return reason;
  }

  /**
   * Returns what the compiler printed.
   *
   * @return the build log, never null
   */
  public String buildLog() {
    return buildLog;
  }
}
