package org.mpibuild.mpijava;

import mpi.MPI;
import mpi.MPIException;
import org.mpibuild.CommunicationException;
import org.mpibuild.spi.Communicator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * MPI's lifecycle as seen by the library. An MPI that the program initialized is used and never
 * finalized. If the library initialized MPI itself, it finalizes it when the JVM exits (a shutdown hook),
 * so that MpiBuild instances can come and go during the run. Touching this class loads
 * {@code libmpi_java}: probe for {@code mpi.jar} first.
 */
public final class MpiJavaWorld {
  private static final Logger log = LoggerFactory.getLogger(MpiJavaWorld.class);
  private static boolean initializedHere;

  private MpiJavaWorld() {}

  /**
   * Returns a communicator over a duplicate of {@code MPI.COMM_WORLD}, initializing MPI if it is not yet
   * and {@code mayInitialize} holds; returns null if MPI is not initialized and may not be.
   */
  public static synchronized Communicator open(boolean mayInitialize) {
    try {
      if (MPI.isFinalized()) {
        throw new IllegalStateException("MPI has already been finalized in this process");
      }
      if (!MPI.isInitialized()) {
        if (!mayInitialize) {
          return null;
        }
        int provided = MPI.InitThread(new String[0], MPI.THREAD_MULTIPLE);
        initializedHere = true;
        Runtime.getRuntime().addShutdownHook(new Thread(MpiJavaWorld::finalizeAtExit, "mpi-build-finalize"));
        log.debug("mpi-build initialized MPI (thread level provided: {}); it finalizes it at exit", provided);
      }
      return MpiJavaCommunicator.duplicate(MPI.COMM_WORLD, "COMM_WORLD", null);
    } catch (MPIException e) {
      throw new CommunicationException("cannot initialize MPI: " + e.getMessage(), e);
    }
  }

  private static synchronized void finalizeAtExit() {
    if (!initializedHere) {
      return;
    }
    try {
      if (!MPI.isFinalized()) {
        MPI.Finalize();
      }
    } catch (MPIException | RuntimeException e) {
      System.err.println("mpi-build: MPI_Finalize at exit failed: " + e);
    }
  }
}
