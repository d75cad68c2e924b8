package org.mpibuild.mpijava;

import mpi.MPI;
import org.mpibuild.spi.Communicator;
import org.mpibuild.testkit.CommunicatorContract;

/**
 * One rank of {@link MpiJavaContractTest}'s job: MPI.COMM_WORLD through the binding, held to the SPI's
 * contract; with the argument {@code abort}, the last rank aborts the job instead.
 */
public final class ContractMain {
  private ContractMain() {}

  public static void main(String[] args) throws Exception {
    MPI.InitThread(args, MPI.THREAD_MULTIPLE);
    try (Communicator comm = MpiJava.communicator(MPI.COMM_WORLD)) {
      if (args.length > 0 && args[0].equals("abort")) {
        CommunicatorContract.abortFromTheLastRank(comm);
      }
      CommunicatorContract.runOrAbort(comm);
    }
    MPI.Finalize();
  }
}
