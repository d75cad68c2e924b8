package org.mpibuild.internal.startup;

import java.util.List;
import java.util.Map;
import org.mpibuild.MpiUnavailableException;
import org.mpibuild.internal.comm.LocalCommunicator;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.MpiBinding;
import org.mpibuild.internal.base.EssentialWarning;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Chooses how this process talks to MPI: one of the installed bindings (mpi.jar, FFM), or local mode. A
 * process that an MPI launcher started as one rank of several never falls back to local mode silently: with
 * no binding that can run, it fails ({@link MpiUnavailableException}) unless {@code MPI_BUILD_MODE=local}
 * asks for local builds.
 */
final class MpiBindings {
  private static final Logger log = LoggerFactory.getLogger(MpiBindings.class);
  static final String MPIJAVA = "mpijava";
  static final String FFM = "ffm";

  private MpiBindings() {}

  /** Where a launcher says how many ranks it started, in the order they are believed. */
  static final List<String> SIZE_VARIABLES = List.of("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS",
      "SLURM_NTASKS");

  /** The Maven coordinates of the bindings, as the README's dependency block names them. */
  static final String ARTIFACTS = "org.mpibuild:mpi-build-mpijava (Open MPI's mpi.jar, Java 17+) or "
      + "org.mpibuild:mpi-build-ffm (any MPI's C library, Java 22+)";

  /** Opens the world communicator that {@code mode} and {@code choice} (auto, mpijava or ffm) call for. */
  public static Communicator openWorld(Settings.Mode mode, Settings.Binding choice) {
    return openWorld(mode, choice, System.getenv());
  }

  static Communicator openWorld(Settings.Mode mode, Settings.Binding choice, Map<String, String> env) {
    if (mode == Settings.Mode.LOCAL) {
      return new LocalCommunicator();
    }
    boolean launched = launchedByMpi(env);
    boolean openMpiLaunch = env.get("OMPI_COMM_WORLD_SIZE") != null;
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
    String noFfm = "not tried (MPI_BUILD_BINDING=mpijava)";
    if (choice != Settings.Binding.MPIJAVA) {
      MpiBinding ffm = MpiBinding.find(FFM);
      String why = ffm == null ? "mpi-build-ffm is not on the class path (or needs Java 22+)" : ffm.unavailable();
      noFfm = why;
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
    return mpiJavaOrLocal(mode, env, launched, mpiJava, noMpiJava, noFfm);
  }

  /**
   * Steps 3 and 4 of {@link #openWorld}: mpi.jar where it can run, else local mode; refused where MPI is asked
   * for or a launcher started the job ({@code noMpiJava} and {@code noFfm} say why neither binding runs).
   */
  private static Communicator mpiJavaOrLocal(Settings.Mode mode, Map<String, String> env, boolean launched,
      MpiBinding mpiJava, String noMpiJava, String noFfm) {
    if (noMpiJava != null) {
      if (mode == Settings.Mode.MPI) {
        throw new IllegalStateException("MPI_BUILD_MODE=mpi, but " + noMpiJava);
      }
      if (launched) {
        noBinding(env, noMpiJava, noFfm);
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

  /**
   * Started by a launcher, but no binding can run: with several ranks, throws (after printing the reason on
   * stderr, even without an SLF4J provider); with one rank, or a size the launcher does not tell, warns that
   * this rank builds alone.
   */
  private static void noBinding(Map<String, String> env, String noMpiJava, String noFfm) {
    String launcher = MpiBinding.launcherVariables(env).toString();
    String reasons = "no MPI binding can run (mpi.jar binding: " + noMpiJava + "; FFM binding: " + noFfm + ")";
    int size = launchedSize(env);
    if (size > 1) {
      String message = "started by an MPI launcher as one of " + size + " ranks " + launcher + ", but " + reasons
          + ", so every rank would build alone; add " + ARTIFACTS + " to the class path, or set MPI_BUILD_MODE=local "
          + "(-Dmpibuild.mode=local, MpiBuild.builder().local()) to have each rank build alone on purpose";
      EssentialWarning.print(message);
      throw new MpiUnavailableException(message);
    }
    EssentialWarning.print("started by an MPI launcher " + launcher + ", but " + reasons + ": this rank builds alone; "
        + "add " + ARTIFACTS + ", or set MPI_BUILD_MODE=local to say that local builds are meant");
  }

  /**
   * The number of ranks the launcher started, as its variables say before MPI starts (Open MPI's mpirun,
   * Hydra's mpiexec, Slurm's srun); 0 when the process was not launched or the size is not told.
   */
  static int launchedSize(Map<String, String> env) {
    if (!launchedByMpi(env)) {
      return 0;
    }
    for (String v : SIZE_VARIABLES) {
      String value = env.get(v);
      if (value != null) {
        try {
          return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
          // not a size: try the next
        }
      }
    }
    return 0;
  }

  static boolean launchedByMpi(Map<String, String> env) {
    return !MpiBinding.launcherVariables(env).isEmpty();
  }
}
