package org.mpibuild.programs;

import mpi.MPI;
import mpi.MPIException;
import org.mpibuild.mpijava.MpiJava;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.MpiBinding;

/**
 * The MPI world of a program run under mpirun, at {@code MPI_THREAD_MULTIPLE}: mpi.jar's, which the program
 * initializes itself as an mpi.jar program does, or the FFM binding's (Java 22+) where
 * {@code MPI_BUILD_BINDING=ffm}.
 */
public final class ProgramWorld {
  private ProgramWorld() {}

  /** Whether the FFM binding is asked for ({@code MPI_BUILD_BINDING=ffm}). */
  static boolean ffm() {
    return "ffm".equals(System.getenv("MPI_BUILD_BINDING"));
  }

  /**
   * Initializes MPI through the chosen binding and returns its world.
   *
   * @throws IllegalStateException if MPI provides less than {@code MPI_THREAD_MULTIPLE}, or the FFM binding
   *     cannot run here
   */
  static Communicator open(String[] args) throws MPIException {
    if (ffm()) {
      return openBinding("ffm");
    }
    int provided = MPI.InitThread(args, MPI.THREAD_MULTIPLE);
    if (provided < MPI.THREAD_MULTIPLE) {
      throw new IllegalStateException("MPI provides thread level " + provided + ", not MPI_THREAD_MULTIPLE ("
          + MPI.THREAD_MULTIPLE + ")");
    }
    return MpiJava.communicator(MPI.COMM_WORLD);
  }

  /**
   * The world communicator of the binding {@code id} ({@code ffm}, {@code mpijava}), which initializes MPI
   * itself at {@code MPI_THREAD_MULTIPLE} and finalizes it at exit.
   *
   * @throws IllegalStateException if the binding is not on the class path or cannot run here
   */
  public static Communicator openBinding(String id) {
    MpiBinding binding = MpiBinding.find(id);
    if (binding == null || binding.unavailable() != null) {
      throw new IllegalStateException("MPI binding '" + id + "' cannot run: "
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
