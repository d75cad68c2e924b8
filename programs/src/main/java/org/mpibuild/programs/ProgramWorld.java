package org.mpibuild.programs;

import mpi.MPI;
import mpi.MPIException;
import org.mpibuild.mpijava.MpiJava;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.MpiBinding;

/**
 * The MPI world of a program run under mpirun, at {@code MPI_THREAD_MULTIPLE}: mpi.jar's, or the FFM binding's
 * (Java 22+) where {@code MPI_BUILD_BINDING=ffm}.
 */
final class ProgramWorld {
  private ProgramWorld() {}

  /** Whether the FFM binding is asked for. */
  static boolean ffm() {
    return "ffm".equals(System.getenv("MPI_BUILD_BINDING"));
  }

  /** Initializes MPI through the chosen binding and returns its world. */
  static Communicator open(String[] args) throws MPIException {
    if (!ffm()) {
      MPI.InitThread(args, MPI.THREAD_MULTIPLE);
      return MpiJava.communicator(MPI.COMM_WORLD);
    }
    MpiBinding binding = MpiBinding.find("ffm");
    if (binding == null || binding.unavailable() != null) {
      throw new IllegalStateException("the FFM binding cannot run: "
          + (binding == null ? "not on the class path" : binding.unavailable()));
    }
    return binding.openWorld(true);
  }

  /** Finalizes MPI where the program initialized it through mpi.jar; the FFM binding finalizes at exit. */
  static void finish() throws MPIException {
    if (!ffm()) {
      MPI.Finalize();
    }
  }
}
