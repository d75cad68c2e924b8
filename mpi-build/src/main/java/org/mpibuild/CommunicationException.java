package org.mpibuild;

/** An MPI operation of the build failed. The message names the operation and MPI's error. */
public class CommunicationException extends KernelBuildException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates a communication failure.
   *
   * @param message the operation that failed and why
   * @param cause the binding's exception
   */
  public CommunicationException(String message, Throwable cause) {
    super(message, cause);
  }
}
