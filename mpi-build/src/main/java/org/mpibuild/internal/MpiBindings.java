package org.mpibuild.internal;

import java.util.Map;
import org.mpibuild.internal.comm.LocalCommunicator;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.MpiBinding;
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
    String choice = bindingChoice();
    boolean openMpiLaunch = System.getenv("OMPI_COMM_WORLD_SIZE") != null;
    // 1. An MPI that the program initialized through mpi.jar keeps mpi.jar.
    if (choice.equals("auto") && (openMpiLaunch || !launched) && classPresent("mpi.MPI")) {
      try {
        Communicator world = org.mpibuild.internal.mpijava.MpiJavaWorld.open(false);
        if (world != null) {
          log.debug("MPI binding: mpi.jar (the program initialized MPI through it)");
          return world;
        }
      } catch (LinkageError e) {
        log.debug("mpi.jar present but unusable: {}", e.toString());
      }
    }
    // 2. On Java 22+ with an MPI C library: FFM.
    if (!choice.equals("mpijava")) {
      MpiBinding ffm = ffm();
      String why = ffm == null ? "mpi-build-ffm is not on the class path" : ffm.unavailable();
      if (why == null) {
        Communicator world = ffm.openWorld(launched || mode == Settings.Mode.MPI);
        if (world != null) {
          log.debug("MPI binding: FFM over {}", ffm.describe());
          return world;
        }
      } else if (choice.equals("ffm")) {
        throw new IllegalStateException("MPI_BUILD_BINDING=ffm, but the FFM binding cannot run: " + why);
      }
    }
    if (choice.equals("ffm")) {
      return new LocalCommunicator(); // FFM chosen, MPI neither initialized nor launched
    }
    // 3. mpi.jar; 4. local.
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

  /** {@code MPI_BUILD_BINDING} / {@code mpibuild.binding}: auto (default), mpijava or ffm. */
  static String bindingChoice() {
    String v = Config.ofProcess().string("mpibuild.binding", "MPI_BUILD_BINDING", "auto").trim().toLowerCase(
        java.util.Locale.ROOT);
    if (!v.equals("auto") && !v.equals("mpijava") && !v.equals("ffm")) {
      throw new IllegalArgumentException("MPI_BUILD_BINDING / mpibuild.binding is '" + v
          + "'; expected auto, mpijava or ffm");
    }
    return v;
  }

  /** The FFM binding if its module is on the class path and loads on this Java; else null. */
  public static MpiBinding ffm() {
    try {
      for (MpiBinding b : java.util.ServiceLoader.load(MpiBinding.class, MpiBindings.class.getClassLoader())) {
        if (b.id().equals("ffm")) {
          return b;
        }
      }
    } catch (java.util.ServiceConfigurationError | LinkageError e) {
      log.debug("the FFM binding cannot load on this Java: {}", e.toString());
    }
    return null;
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
