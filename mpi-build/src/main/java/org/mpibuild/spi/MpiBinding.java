package org.mpibuild.spi;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.TreeMap;

/**
 * A way to reach MPI, found through {@link ServiceLoader}: {@code mpi-build-mpijava} over Open MPI's
 * {@code mpi.jar}, {@code mpi-build-ffm} over the MPI C library through Java's Foreign Function and Memory
 * API. Creating a binding must be cheap and must not load native code.
 */
public interface MpiBinding {
  /** The environment variables by which MPI launchers (mpirun, mpiexec, srun) mark the processes they start. */
  List<String> LAUNCHER_VARIABLES = List.of("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
      "MPI_LOCALNRANKS");

  /**
   * Returns the bindings on the class path that load on this Java, in class-path order.
   *
   * @return the installed bindings
   */
  static List<MpiBinding> installed() {
    List<MpiBinding> out = new ArrayList<>();
    var it = ServiceLoader.load(MpiBinding.class, MpiBinding.class.getClassLoader()).iterator();
    while (true) {
      try {
        if (!it.hasNext()) {
          return out;
        }
        out.add(it.next());
      } catch (ServiceConfigurationError | LinkageError e) {
        // a binding that cannot load on this Java (the FFM one before Java 22): not installed here
      }
    }
  }

  /**
   * Returns the installed binding with this id.
   *
   * @param id for example {@code "mpijava"} or {@code "ffm"}
   * @return the binding, or null if none with that id is installed
   */
  static MpiBinding find(String id) {
    for (MpiBinding b : installed()) {
      if (b.id().equals(id)) {
        return b;
      }
    }
    return null;
  }

  /**
   * Returns the MPI launcher variables set in {@code env}, by name.
   *
   * @param env an environment, usually {@link System#getenv()}
   * @return the variables found; empty when the process was not started by a launcher
   */
  static Map<String, String> launcherVariables(Map<String, String> env) {
    Map<String, String> out = new TreeMap<>();
    for (String v : LAUNCHER_VARIABLES) {
      if (env.containsKey(v)) {
        out.put(v, env.get(v));
      }
    }
    return out;
  }

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

  /**
   * Returns the settings this plug-in reads, so that {@code mpi-build doctor} and the README list them.
   *
   * @return its settings; none by default
   */
  default List<Setting<?>> settings() {
    return List.of();
  }
}
