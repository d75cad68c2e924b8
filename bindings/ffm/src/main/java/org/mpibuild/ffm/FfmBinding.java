package org.mpibuild.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import org.mpibuild.CommunicationException;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.MpiBinding;
import org.mpibuild.spi.Setting;
import org.mpibuild.spi.SettingSource;

/**
 * The FFM binding: the library's MPI interface over the MPI C library, for Open MPI and MPICH, with no
 * {@code mpi.jar} and no JNI. Java 22 or later.
 *
 * <p>Which library: {@code MPI_BUILD_MPI_LIBRARY} if set; else the launcher's implementation's, its MPI 5.0
 * standard-ABI library first ({@code libmpi_abi_openmpi.so*} under Open MPI's mpirun, {@code
 * libmpi_abi_mpich.so*} under Hydra), then its own ({@code libmpi.so.40}, {@code libmpich.so.12});
 * {@code MPI_BUILD_MPI_ABI} narrows that to one ABI ({@link Libraries}). A library that reports a standard ABI
 * ({@code MPI_Abi_get_version}) is driven with the standard's constants ({@link HandleTable#STANDARD_ABI}); any other
 * with its implementation's table, told by {@code MPI_Get_library_version}. An MPI that the program initialized is used and never finalized; one that this
 * binding initialized is finalized at JVM exit.
 */
public final class FfmBinding implements MpiBinding {
  private static MpiC mpi;
  private static boolean initializedHere;

  @Override
  public String id() {
    return "ffm";
  }

  @Override
  public String unavailable() {
    if (Runtime.version().feature() < 22) {
      return "Java " + Runtime.version().feature() + " has no final FFM API (Java 22 or later)";
    }
    try {
      library();
      return null;
    } catch (RuntimeException | LinkageError e) {
      return e.getMessage();
    }
  }

  @Override
  public String describe() {
    MpiC m = library();
    String version = m.version.lines().findFirst().orElse(m.version).strip().replaceAll("\\s+", " ");
    return version + " (" + m.library + "), driven with " + m.mode()
        + "; persistent collectives: " + m.persistent.description() + "; why: " + m.choice;
  }

  /** The MPI C library of this process, opened once. */
  static synchronized MpiC library() {
    if (mpi == null) {
      SettingSource settings = SettingSource.ofProcess();
      Libraries.Abi abi = ABI.read(settings);
      String named = LIBRARY.read(settings);
      Map<String, String> env = System.getenv();
      if (named != null && !named.isBlank()) {
        mpi = MpiC.open(List.of(new Libraries.Candidate(named.trim(), false, null)), abi, null,
            "MPI_BUILD_MPI_LIBRARY names it");
      } else {
        Libraries.Implementation launcher = Libraries.launcher(env);
        mpi = MpiC.open(Libraries.candidates(abi, env, Libraries.searchDirectories(env)), abi, launcher,
            launcher == null ? "no MPI launcher recognised (Open MPI's first)" : launcher.label + "'s launcher");
      }
    }
    return mpi;
  }

  static final Setting<String> LIBRARY = Setting.text("MPI_BUILD_MPI_LIBRARY", null, null, "the launcher's",
      "the MPI C library the FFM binding opens, a name or a full path, e.g. `libmpich.so.12` or "
          + "`/usr/lib/x86_64-linux-gnu/libmpi_abi_mpich.so.1`");

  static final Setting<Libraries.Abi> ABI = Setting.choice("MPI_BUILD_MPI_ABI", null, Libraries.Abi.class,
      Libraries.Abi.AUTO, "which ABI the FFM binding drives MPI with: `standard` (the MPI 5.0 standard ABI's "
          + "`libmpi_abi`), `implementation` (Open MPI's or MPICH's own library and constants), or `auto` (the "
          + "standard ABI where the launcher's implementation ships it)");

  @Override
  public List<Setting<?>> settings() {
    return List.of(LIBRARY, ABI);
  }

  @Override
  public synchronized Communicator openWorld(boolean mayInitialize) {
    MpiC m = library();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment flag = arena.allocate(JAVA_INT);
      check(m, m.mpi("MPI_Finalized", ADDRESS, flag), "MPI_Finalized");
      if (flag.get(JAVA_INT, 0) != 0) {
        throw new IllegalStateException("MPI has already been finalized in this process");
      }
      check(m, m.mpi("MPI_Initialized", ADDRESS, flag), "MPI_Initialized");
      if (flag.get(JAVA_INT, 0) == 0) {
        if (!mayInitialize) {
          return null;
        }
        MemorySegment provided = arena.allocate(JAVA_INT);
        check(m, m.mpi("MPI_Init_thread", ADDRESS, MemorySegment.NULL, ADDRESS, MemorySegment.NULL, JAVA_INT, m.table.threadLevel(3),
            ADDRESS, provided), "MPI_Init_thread");
        initializedHere = true;
        Runtime.getRuntime().addShutdownHook(new Thread(FfmBinding::finalizeAtExit, "mpi-build-ffm-finalize"));
      }
    }
    return FfmCommunicator.duplicate(m, m.table.commWorld(), "MPI_COMM_WORLD");
  }

  /** Whether MPI has been finalized (then communicators are not freed). */
  static boolean finalized(MpiC m) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment flag = arena.allocate(JAVA_INT);
      return m.mpi("MPI_Finalized", ADDRESS, flag) == MpiC.SUCCESS && flag.get(JAVA_INT, 0) != 0;
    }
  }

  private static synchronized void finalizeAtExit() {
    if (initializedHere && !finalized(mpi)) {
      int rc = mpi.mpi("MPI_Finalize");
      if (rc != MpiC.SUCCESS) {
        System.err.println("mpi-build: MPI_Finalize at exit failed: " + mpi.errorString(rc));
      }
    }
  }

  private static void check(MpiC m, int rc, String what) {
    if (rc != MpiC.SUCCESS) {
      throw new CommunicationException(what + " failed: " + m.errorString(rc), null);
    }
  }
}
