package org.mpibuild.examples;

import mpi.MPI;
import mpi.MPIException;
import org.mpibuild.Kernel;
import org.mpibuild.MpiBuild;
import org.mpibuild.opencl.OpenClKernel;

/**
 * Open MPI's {@code Ring.java} with mpi-build dropped in: the program owns MPI (it calls {@code MPI.Init}
 * and {@code MPI.Finalize}), adds one collective call so that every rank gets a kernel that only rank 0
 * compiled, runs it, and passes around the ring how many ranks checked their result.
 *
 * <pre>mpirun -np 4 java -cp "$(bin/mpi-build classpath):examples/target/mpi-build-examples.jar" org.mpibuild.examples.Ring</pre>
 */
public final class Ring {
  private Ring() {}

  public static void main(String[] args) throws MPIException {
    MPI.Init(args);
    int rank = MPI.COMM_WORLD.getRank();
    int size = MPI.COMM_WORLD.getSize();
    int next = (rank + 1) % size;
    int prev = (rank + size - 1) % size;
    int tag = 201;

    // The drop-in: rank 0 compiles, every rank loads the same binary. It never touches the program's MPI
    // state; it works on its own duplicate of MPI_COMM_WORLD.
    boolean verified;
    try (MpiBuild mpiBuild = MpiBuild.builder().backend("opencl").build();
         Kernel kernel = mpiBuild.mpiBuildKernel(Saxpy.REQUEST, 0)) {
      verified = Saxpy.runAndVerify(kernel.as(OpenClKernel.class), rank, 1 << 12);
    }

    // The ring, as in Open MPI's example: rank 0 starts the count, every rank adds its own.
    int[] message = {verified ? 1 : 0};
    if (size > 1) {
      if (rank == 0) {
        MPI.COMM_WORLD.send(message, 1, MPI.INT, next, tag);
        MPI.COMM_WORLD.recv(message, 1, MPI.INT, prev, tag);
      } else {
        int mine = message[0];
        MPI.COMM_WORLD.recv(message, 1, MPI.INT, prev, tag);
        message[0] += mine;
        MPI.COMM_WORLD.send(message, 1, MPI.INT, next, tag);
      }
    }
    if (rank == 0) {
      System.out.println("ring: " + message[0] + " of " + size + " ranks verified the kernel rank 0 compiled");
    }
    MPI.Finalize();
  }
}
