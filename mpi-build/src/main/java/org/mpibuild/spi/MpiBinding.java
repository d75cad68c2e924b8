package org.mpibuild.spi;

/**
 * A way to reach MPI other than Open MPI's {@code mpi.jar}, found through {@link java.util.ServiceLoader}
 * (for example {@code mpi-build-ffm}, which calls the MPI C library through Java's Foreign Function and
 * Memory API). Creating a binding must be cheap and must not load native code.
 */
public interface MpiBinding {
  /** @return the binding's id, for example {@code "ffm"} */
  String id();

  /**
   * Returns why this binding cannot run here (Java too old, no MPI C library found), or null if it can.
   * Loads nothing that it cannot unload.
   *
   * @return the reason, or null
   */
  String unavailable();

  /**
   * Returns a communicator over a duplicate of the world communicator, initializing MPI if it is not yet and
   * {@code mayInitialize} holds (then finalizing it at JVM exit); null if MPI is not initialized and may not be.
   *
   * @param mayInitialize whether the binding may call {@code MPI_Init_thread}
   * @return the communicator, or null
   */
  Communicator openWorld(boolean mayInitialize);

  /** @return what the binding talks to, for logs and doctor, for example {@code "Open MPI v4.1.4 (libmpi.so.40)"} */
  String describe();
}
