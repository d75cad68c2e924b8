package org.mpibuild;

/**
 * Root of every exception mpi-build throws for a failure of its own work: a build, a load, the MPI
 * communication, a backend. Catch it to handle them all; catch a subtype to handle one:
 *
 * <ul>
 *   <li>{@link KernelBuildException}: a collective build failed, the same on every rank, with
 *       {@link CompileException} (the build log), {@link RequestMismatchException} (the ranks that differ),
 *       {@link KernelLoadException} (the ranks that could not load), {@link BuildTimeoutException},
 *       {@link CorruptBinaryException}, {@link CommunicationException} and
 *       {@link BackendUnavailableException} under it.
 *   <li>{@link MpiUnavailableException}: the job was launched with several ranks but no MPI binding can
 *       run, so the instance cannot be created.
 * </ul>
 *
 * <p>Misuse is reported with the JDK's exceptions, as their contracts say: {@link IllegalArgumentException}
 * for a bad value (the message names it), {@link IllegalStateException} for a closed instance,
 * {@link NullPointerException} for a null argument.
 */
public class MpiBuildException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates an exception with a message.
   *
   * @param message what went wrong, for a person
   */
  public MpiBuildException(String message) {
    super(message);
  }

  /**
   * Creates an exception with a message and a cause.
   *
   * @param message what went wrong, for a person
   * @param cause the underlying failure
   */
  public MpiBuildException(String message, Throwable cause) {
    super(message, cause);
  }
}
