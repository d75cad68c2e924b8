package org.mpibuild;

/**
 * MPI cannot be reached although the job needs it: for example, the process was started by an MPI launcher
 * with several ranks, but no MPI binding ({@code mpi-build-mpijava} or {@code mpi-build-ffm}) can run here,
 * so every rank would build alone. The message names the launcher's variables, why each binding cannot run,
 * the artifacts to add, and {@code MPI_BUILD_MODE=local} for local builds on purpose.
 */
public class MpiUnavailableException extends MpiBuildException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the report.
   *
   * @param message what the launcher said, why no binding runs, and what to do
   */
  public MpiUnavailableException(String message) {
    super(message);
  }
}
