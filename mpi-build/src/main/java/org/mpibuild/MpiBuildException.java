package org.mpibuild;

/**
 * Root of every exception mpi-build throws for a failure of its own work: a build, a load, the MPI
 * communication, a backend. Catch it to handle them all; catch a subtype to handle one. Its subtypes, and
 * what each one means:
 *
 * <ul>
 *   <li>{@link KernelBuildException}: a collective build could not give a kernel or a binary; every rank
 *       throws the same type with the same message. Thrown as itself when nothing more precise applies (the
 *       compiler crashed, for example); otherwise as one of its subtypes:
 *       <ul>
 *         <li>{@link CompileException}: the compiler rejected the source; carries the build log.
 *         <li>{@link RequestMismatchException}: the ranks asked for different things (request, root, or a
 *             setting that shapes the protocol); names the ranks that differ and in what.
 *         <li>{@link KernelLoadException}: some ranks could not load the binary; names them and why.
 *         <li>{@link BuildTimeoutException}: the compile ran past the compile timeout.
 *         <li>{@link CorruptBinaryException}: a binary, a cache entry or a message failed its integrity
 *             checks and was not used.
 *         <li>{@link CommunicationException}: MPI reported an error in one of the build's operations.
 *         <li>{@link BackendUnavailableException}: the backend cannot run on some rank, so the instance
 *             cannot be created.
 *       </ul>
 *   <li>{@link MpiUnavailableException}: the job was launched with several ranks but no MPI binding can
 *       run, so the instance cannot be created.
 *   <li>{@code org.mpibuild.streams.DeviceFailure} (module {@code mpi-build-streams}): a device command that a
 *       stream-ordered message or collective depended on failed; carries the device API's error code.
 * </ul>
 *
 * <p>Misuse is reported with the JDK's exceptions, as their contracts say: {@link IllegalArgumentException}
 * for a bad value (the message names it), {@link IllegalStateException} for a closed instance or a second
 * thread, {@link NullPointerException} for a null argument. Three failures to start MPI are also
 * {@link IllegalStateException}s, as they always were: {@code MPI_BUILD_MODE=mpi} or
 * {@code MPI_BUILD_BINDING=ffm} with no binding that can run, and, under a launcher or in that mode, an
 * {@code mpi.jar} whose native library cannot be loaded.
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
