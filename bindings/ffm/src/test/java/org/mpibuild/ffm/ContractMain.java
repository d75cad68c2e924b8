package org.mpibuild.ffm;

import org.mpibuild.spi.Communicator;
import org.mpibuild.testkit.CommunicatorContract;

/**
 * One rank of {@link FfmContractTest}'s job: MPI_COMM_WORLD through the binding (which initializes MPI, and
 * finalizes it at exit), held to the SPI's contract; with the argument {@code abort}, the last rank aborts
 * the job instead.
 */
public final class ContractMain {
  private ContractMain() {}

  public static void main(String[] args) {
    try (Communicator comm = new FfmBinding().openWorld(true)) {
      if (args.length > 0 && args[0].equals("abort")) {
        CommunicatorContract.abortFromTheLastRank(comm);
      }
      CommunicatorContract.runOrAbort(comm);
    }
  }
}
