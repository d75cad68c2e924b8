package org.mpibuild.ffm;

import org.mpibuild.spi.Communicator;

/**
 * Builds on a communicator of a program that calls MPI's C library itself through Java's Foreign Function
 * and Memory API; the counterpart of {@code org.mpibuild.mpijava.MpiJava} for programs without
 * {@code mpi.jar}.
 *
 * <pre>{@code
 * long handle = ...; // the program's MPI_Comm: an address with Open MPI, an int with MPICH
 * try (Communicator comm = Ffm.communicator(handle);
 *      MpiBuild mpiBuild = MpiBuild.builder().communicator(comm).build()) {
 *   Kernel kernel = mpiBuild.mpiBuildKernel(source, 0);
 * }
 * }</pre>
 */
public final class Ffm {
  private Ffm() {}

  /**
   * Returns a communicator over a duplicate of the program's communicator {@code handle}. Collective over it;
   * MPI must be initialized. Closing the result frees the duplicate, never {@code handle} and never MPI; the
   * program closes it (the library does not close a communicator it was given).
   *
   * @param handle the program's {@code MPI_Comm}, as a long
   * @return the communicator to pass to {@code MpiBuildBuilder#communicator}
   * @throws IllegalStateException if the binding cannot run here (the reason says why)
   */
  public static Communicator communicator(long handle) {
    FfmBinding binding = new FfmBinding();
    String why = binding.unavailable();
    if (why != null) {
      throw new IllegalStateException("the FFM binding cannot run: " + why);
    }
    return FfmCommunicator.duplicate(FfmBinding.library(), handle, "user communicator");
  }
}
