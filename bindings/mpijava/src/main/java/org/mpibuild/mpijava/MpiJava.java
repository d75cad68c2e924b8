package org.mpibuild.mpijava;

import mpi.Intracomm;
import org.mpibuild.spi.Communicator;

/**
 * Builds on a communicator of Open MPI's Java bindings ({@code mpi.jar}).
 *
 * <pre>{@code
 * Intracomm nodeComm = MPI.COMM_WORLD.split(color, key);
 * try (MpiBuild mpiBuild = MpiBuild.builder().communicator(MpiJava.communicator(nodeComm)).build()) {
 *   Kernel kernel = mpiBuild.mpiBuildKernel(source, 0);
 * }
 * }</pre>
 */
public final class MpiJava {
  private MpiJava() {}

  /**
   * Returns a communicator over a duplicate of {@code comm}. Collective over {@code comm}; MPI must be
   * initialized. Closing it frees the duplicate, never {@code comm} and never MPI.
   *
   * @param comm an intracommunicator of the program
   * @return the communicator to pass to {@link org.mpibuild.MpiBuildBuilder#communicator}
   */
  public static Communicator communicator(Intracomm comm) {
    if (comm == null) {
      throw new NullPointerException("comm is null");
    }
    return MpiJavaCommunicator.duplicate(comm, "user communicator", null);
  }
}
