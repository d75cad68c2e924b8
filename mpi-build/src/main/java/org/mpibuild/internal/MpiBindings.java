package org.mpibuild.internal;

import java.util.Map;
import org.mpibuild.internal.comm.LocalCommunicator;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.MpiBinding;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Chooses how this process talks to MPI: one of the installed bindings (mpi.jar, FFM), or local mode. */
public final class MpiBindings {
  private static final Logger log = LoggerFactory.getLogger(MpiBindings.class);
  static final String MPIJAVA = "mpijava";
  static final String FFM = "ffm";

  private MpiBindings() {}

  /** Opens the world communicator that {@code mode} and {@code choice} (auto, mpijava or ffm) call for. */
  public static Communicator openWorld(Settings.Mode mode, Settings.Binding choice) {
    if (mode == Settings.Mode.LOCAL) {
      return new LocalCommunicator();
    }
    boolean launched = launchedByMpi(System.getenv());
    boolean openMpiLaunch = System.getenv("OMPI_COMM_WORLD_SIZE") != null;
    MpiBinding mpiJava = MpiBinding.find(MPIJAVA);
    String noMpiJava = mpiJava == null ? "mpi-build-mpijava is not on the class path" : mpiJava.unavailable();
    // 1. An MPI that the program initialized through mpi.jar keeps mpi.jar.
    if (choice == Settings.Binding.AUTO && (openMpiLaunch || !launched) && noMpiJava == null) {
      try {
        Communicator world = mpiJava.openWorld(false);
        if (world != null) {
          log.debug("MPI binding: mpi.jar (the program initialized MPI through it)");
          return world;
        }
      } catch (LinkageError e) {
        log.debug("mpi.jar present but unusable: {}", e.toString());
      }
    }
    // 2. On Java 22+ with an MPI C library: FFM.
    if (choice != Settings.Binding.MPIJAVA) {
      MpiBinding ffm = MpiBinding.find(FFM);
      String why = ffm == null ? "mpi-build-ffm is not on the class path (or needs Java 22+)" : ffm.unavailable();
      if (why == null) {
        Communicator world = ffm.openWorld(launched || mode == Settings.Mode.MPI);
        if (world != null) {
          log.debug("MPI binding: FFM over {}", ffm.describe());
          return world;
        }
      } else if (choice == Settings.Binding.FFM) {
        throw new IllegalStateException("MPI_BUILD_BINDING=ffm, but the FFM binding cannot run: " + why);
      }
    }
    if (choice == Settings.Binding.FFM) {
      return new LocalCommunicator(); // FFM chosen, MPI neither initialized nor launched
    }
    // 3. mpi.jar; 4. local.
    if (noMpiJava != null) {
      if (mode == Settings.Mode.MPI) {
        throw new IllegalStateException("MPI_BUILD_MODE=mpi, but " + noMpiJava);
      }
      if (launched) {
        log.warn("started by an MPI launcher, but {}: every rank builds locally", noMpiJava);
      }
      return new LocalCommunicator();
    }
    try {
      Communicator world = mpiJava.openWorld(launched || mode == Settings.Mode.MPI);
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
    return !MpiBinding.launcherVariables(env).isEmpty();
  }
}
