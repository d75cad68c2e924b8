package org.mpibuild.internal;

import java.util.Map;
import org.mpibuild.internal.comm.LocalCommunicator;
import org.mpibuild.spi.Communicator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Chooses how this process talks to MPI: the mpi.jar binding, or local mode. */
public final class MpiBindings {
  private static final Logger log = LoggerFactory.getLogger(MpiBindings.class);
  private static final String[] LAUNCHER_VARIABLES = {
    "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"
  };

  private MpiBindings() {}

  /** Opens the world communicator that {@code mode} calls for. */
  public static Communicator openWorld(Settings.Mode mode) {
    if (mode == Settings.Mode.LOCAL) {
      return new LocalCommunicator();
    }
    boolean launched = launchedByMpi(System.getenv());
    if (!classPresent("mpi.MPI")) {
      if (mode == Settings.Mode.MPI) {
        throw new IllegalStateException("MPI_BUILD_MODE=mpi, but mpi.jar is not on the class path "
            + "(launch with 'mpirun ... java', which adds Open MPI's mpi.jar, or add it with -cp)");
      }
      if (launched) {
        log.warn("started by an MPI launcher, but mpi.jar is not on the class path: every rank builds locally");
      }
      return new LocalCommunicator();
    }
    try {
      Communicator world = org.mpibuild.internal.mpijava.MpiJavaWorld.open(launched || mode == Settings.Mode.MPI);
      if (world != null) {
        return world;
      }
    } catch (LinkageError e) {
      if (mode == Settings.Mode.MPI || launched) {
        throw new IllegalStateException("mpi.jar is on the class path but its native library cannot be loaded ("
            + e + "); is Open MPI's lib dir on java.library.path?", e);
      }
      log.debug("mpi.jar present but unusable, building locally: {}", e.toString());
    }
    return new LocalCommunicator();
  }

  static boolean launchedByMpi(Map<String, String> env) {
    return !launcherVariables(env).isEmpty();
  }

  /** The MPI launcher variables set in {@code env}, by name; empty when not started by a launcher. */
  public static Map<String, String> launcherVariables(Map<String, String> env) {
    Map<String, String> out = new java.util.TreeMap<>();
    for (String v : LAUNCHER_VARIABLES) {
      if (env.containsKey(v)) {
        out.put(v, env.get(v));
      }
    }
    return out;
  }

  /** Where mpi.jar's classes come from, or null if mpi.jar is not on the class path. Loads no native code. */
  public static String mpiJarLocation() {
    try {
      Class<?> c = Class.forName("mpi.MPI", false, MpiBindings.class.getClassLoader());
      java.security.CodeSource src = c.getProtectionDomain().getCodeSource();
      return src == null ? "(unknown location)" : src.getLocation().getPath();
    } catch (ClassNotFoundException | LinkageError e) {
      return null;
    }
  }

  static boolean classPresent(String name) {
    try {
      Class.forName(name, false, MpiBindings.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }
}
