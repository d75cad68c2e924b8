package org.mpibuild.ffm;

import org.mpibuild.spi.Communicator;

/**
 * Builds on a communicator of a program that calls MPI's C library itself through Java's Foreign Function
 * and Memory API; the counterpart of {@code org.mpibuild.mpijava.MpiJava} for programs without
 * {@code mpi.jar}.
 *
 * <pre>{@code
 * long handle = ...; // the program's MPI_Comm: a pointer's value with the MPI 5.0 standard ABI
 *                    // (MPI_COMM_WORLD is 0x101) and Open MPI, an int with MPICH's own ABI
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
   * @param handle the program's {@code MPI_Comm}, as a long, from the same library and ABI the binding drives
   *     (see {@code bin/mpi-build doctor}, or set {@code MPI_BUILD_MPI_LIBRARY} and {@code MPI_BUILD_MPI_ABI})
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
