package org.mpibuild;

/**
 * The requested backend cannot run here: it is not on the class path, or its native library or device
 * is missing. The message says which, for example {@code OpenCL backend unavailable: no platform}.
 */
public class BackendUnavailableException extends KernelBuildException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates an unavailability report.
   *
   * @param message the backend and the reason
   * @param cause the underlying failure, or null
   */
  public BackendUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
