package org.mpibuild;

/**
 * The compile on the root did not finish within the compile timeout ({@code MPI_BUILD_COMPILE_TIMEOUT}).
 * Every rank throws this exception; the root abandons the compile.
 */
public class BuildTimeoutException extends KernelBuildException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates a timeout report.
   *
   * @param message what timed out, after how long, on which root
   */
  public BuildTimeoutException(String message) {
    super(message);
  }
}
