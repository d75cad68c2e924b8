package org.mpibuild;

/**
 * Root of the exceptions thrown by a kernel build.
 *
 * <p>A collective build is all-or-nothing: when it fails, every rank of the communicator throws an
 * exception of the same type with the same message, so that a program can handle the failure the same
 * way everywhere. Subtypes carry what a person needs to act: the build log, the ranks at fault.
 */
public class KernelBuildException extends MpiBuildException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates an exception with a message.
   *
   * @param message what went wrong, for a person
   */
  public KernelBuildException(String message) {
    super(message);
  }

  /**
   * Creates an exception with a message and a cause.
   *
   * @param message what went wrong, for a person
   * @param cause the underlying failure, local to this rank
   */
  public KernelBuildException(String message, Throwable cause) {
    super(message, cause);
  }
}
