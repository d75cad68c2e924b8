package org.mpibuild.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.mpibuild.CommunicationException;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.MpiBinding;
import org.mpibuild.spi.Setting;
import org.mpibuild.spi.SettingSource;

/**
 * The FFM binding: the library's MPI interface over the MPI C library, for Open MPI and MPICH, with no
 * {@code mpi.jar} and no JNI. Java 22 or later.
 *
 * <p>Which library: {@code MPI_BUILD_MPI_LIBRARY} if set; else the launcher's (Open MPI's
 * {@code libmpi.so.40} under Open MPI's mpirun, MPICH's {@code libmpich.so.12} under Hydra); else the first
 * of those that loads. The implementation is told by {@code MPI_Get_library_version}, and its handle and
 * constant table is used. An MPI that the program initialized is used and never finalized; one that this
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
    return m.version.lines().findFirst().orElse(m.version) + " (" + m.library + ")";
  }

  /** The MPI C library of this process, opened once. */
  static synchronized MpiC library() {
    if (mpi == null) {
      mpi = MpiC.open(candidates().toArray(new String[0]));
    }
    return mpi;
  }

  static List<String> candidates() {
    List<String> out = new ArrayList<>();
    String named = LIBRARY.read(SettingSource.ofProcess());
    if (named != null && !named.isBlank()) {
      out.add(named.trim());
      return out;
    }
    boolean openMpi = System.getenv("OMPI_COMM_WORLD_SIZE") != null;
    boolean hydra = System.getenv("PMI_RANK") != null || System.getenv("MPI_LOCALNRANKS") != null;
    if (hydra && !openMpi) {
      out.add("libmpich.so.12");
      out.add("libmpi.so.40");
    } else {
      out.add("libmpi.so.40");
      out.add("libmpich.so.12");
    }
    return out;
  }

  static final Setting<String> LIBRARY = Setting.text("MPI_BUILD_MPI_LIBRARY", null, null, "the launcher's",
      "the MPI C library the FFM binding opens, e.g. `libmpich.so.12`");

  @Override
  public List<Setting<?>> settings() {
    return List.of(LIBRARY);
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
        check(m, m.mpi("MPI_Init_thread", ADDRESS, MemorySegment.NULL, ADDRESS, MemorySegment.NULL, JAVA_INT, 3,
            ADDRESS, provided), "MPI_Init_thread");
        initializedHere = true;
        Runtime.getRuntime().addShutdownHook(new Thread(FfmBinding::finalizeAtExit, "mpi-build-ffm-finalize"));
      }
    }
    return FfmCommunicator.duplicate(m, m.commWorld, "MPI_COMM_WORLD");
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
