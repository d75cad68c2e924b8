package org.mpibuild.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.mpibuild.spi.Communicator;

/**
 * The MPI C library as seen through the Foreign Function and Memory API, driven with one of three handle and
 * constant tables ({@link Kind}, {@link HandleTable}):
 *
 * <ul>
 *   <li>{@link Kind#STANDARD_ABI}: the MPI 5.0 standard ABI ({@link HandleTable#STANDARD_ABI}): handles are
 *       pointers, built-in handles small integers cast to pointers, {@code MPI_Status} 32 bytes. Any
 *       implementation's {@code libmpi_abi} library; the table is the standard's, not the implementation's.
 *   <li>{@link Kind#OPEN_MPI}: Open MPI's own ABI ({@code libmpi.so.40}): handles are pointers to exported
 *       objects ({@code MPI_COMM_WORLD} is {@code &ompi_mpi_comm_world}).
 *   <li>{@link Kind#MPICH}: MPICH's own ABI ({@code libmpich.so.12}): handles are 32-bit integer constants.
 * </ul>
 *
 * <p>A library that answers {@code MPI_Abi_get_version} with a major version of 1 or more is a standard-ABI
 * library; any other is told apart by {@code MPI_Get_library_version}. Handles are kept as {@code long}s and
 * passed with the table's layout.
 */
final class MpiC {
  /** The handle and constant table a library is driven with. */
  enum Kind {
    OPEN_MPI("Open MPI's own ABI"), MPICH("MPICH's own ABI"), STANDARD_ABI("the MPI 5.0 standard ABI");

    final String description;

    Kind(String description) {
      this.description = description;
    }
  }

  static final int SUCCESS = 0;

  final String library;
  final Kind kind;
  final String version;
  /** {@code MPI_Abi_get_version} as "major.minor", or null where the library has no standard ABI. */
  final String abiVersion;
  /** The handles and constants this library is driven with. */
  final HandleTable table;
  private final boolean pointerHandles;

  private final Linker linker = Linker.nativeLinker();
  private final SymbolLookup lookup;
  private final Map<String, MethodHandle> functions = new HashMap<>();

  // The calls on the path of every broadcast, bound once with exact types (handles as long) so that the
  // JIT compiles them to a direct call; the rest go through the generic, slower mpi(...).
  private MethodHandle bcast;
  private MethodHandle ibcast;
  private MethodHandle iallreduce;
  private MethodHandle allreduce;
  private MethodHandle isend;
  private MethodHandle irecv;
  private MethodHandle send;
  private MethodHandle recv;
  private MethodHandle test;
  private MethodHandle waitFor;
  private MethodHandle start;

  private MpiC(String library, SymbolLookup lookup) {
    this.library = library;
    this.lookup = lookup;
    this.version = libraryVersion();
    int[] abi = standardAbiVersion();
    if (abi != null && abi[0] >= 1) {
      if (abi[0] != HandleTable.STANDARD_ABI_MAJOR) {
        throw new IllegalStateException(library + " has standard ABI " + abi[0] + "." + abi[1]
            + "; this binding follows " + HandleTable.STANDARD_ABI);
      }
      kind = Kind.STANDARD_ABI;
      abiVersion = abi[0] + "." + abi[1];
      table = HandleTable.STANDARD;
    } else if (implementation().equals(Libraries.Implementation.OPEN_MPI.label)) {
      kind = Kind.OPEN_MPI;
      abiVersion = null;
      table = HandleTable.openMpi(this::symbol);
    } else if (implementation().equals(Libraries.Implementation.MPICH.label)) {
      kind = Kind.MPICH;
      abiVersion = null;
      table = HandleTable.MPICH;
    } else {
      throw new IllegalStateException(library + " is neither Open MPI nor MPICH, and has no standard ABI: "
          + version.lines().findFirst().orElse(version));
    }
    pointerHandles = table.handle() == ADDRESS;
    persistent = Persistent.of(name -> lookup.find(name).isPresent(), kind);
    bcast = exact("MPI_Bcast", ADDRESS, JAVA_INT, null, JAVA_INT, null);
    ibcast = exact("MPI_Ibcast", ADDRESS, JAVA_INT, null, JAVA_INT, null, ADDRESS);
    iallreduce = exact("MPI_Iallreduce", ADDRESS, ADDRESS, JAVA_INT, null, null, null, ADDRESS);
    allreduce = exact("MPI_Allreduce", ADDRESS, ADDRESS, JAVA_INT, null, null, null);
    isend = exact("MPI_Isend", ADDRESS, JAVA_INT, null, JAVA_INT, JAVA_INT, null, ADDRESS);
    irecv = exact("MPI_Irecv", ADDRESS, JAVA_INT, null, JAVA_INT, JAVA_INT, null, ADDRESS);
    send = exact("MPI_Send", ADDRESS, JAVA_INT, null, JAVA_INT, JAVA_INT, null);
    recv = exact("MPI_Recv", ADDRESS, JAVA_INT, null, JAVA_INT, JAVA_INT, null, ADDRESS);
    test = exact("MPI_Test", ADDRESS, ADDRESS, ADDRESS);
    waitFor = exact("MPI_Wait", ADDRESS, ADDRESS);
    start = exact("MPI_Start", ADDRESS);
  }

  /**
   * The persistent collectives a library has, by the names it exports: MPI 4.0's {@code MPI_Bcast_init} and
   * {@code MPI_Allreduce_init} (Open MPI 5, MPICH 4, every standard-ABI library), else the {@code MPIX_} forms
   * of Open MPI 4's pcollreq extension (Debian 12's {@code libmpi.so.40}), else none. Both forms take the same
   * arguments, an {@code MPI_Info} before the request included ({@code mpiext_pcollreq_c.h} of Open MPI 4.1.4;
   * {@code mpi.h} of mpi-abi-stubs).
   *
   * @param bcastInit the broadcast's function, or null when there are none
   * @param allreduceInit the all-reduce's function, or null
   * @param description what {@link Communicator#persistentCollectives} says
   */
  record Persistent(String bcastInit, String allreduceInit, String description) {
    static Persistent of(java.util.function.Predicate<String> exported, Kind kind) {
      if (exported.test("MPI_Bcast_init") && exported.test("MPI_Allreduce_init")) {
        return new Persistent("MPI_Bcast_init", "MPI_Allreduce_init", "MPI_Bcast_init and MPI_Allreduce_init (MPI 4.0)");
      }
      if (exported.test("MPIX_Bcast_init") && exported.test("MPIX_Allreduce_init")) {
        return new Persistent("MPIX_Bcast_init", "MPIX_Allreduce_init", "MPIX_Bcast_init and MPIX_Allreduce_init ("
            + (kind == Kind.OPEN_MPI ? "Open MPI's pcollreq extension" : "an MPIX_ extension") + ")");
      }
      return new Persistent(null, null, Communicator.NO_PERSISTENT_COLLECTIVES);
    }

    boolean available() {
      return bcastInit != null;
    }
  }

  /** This library's persistent collectives. */
  final Persistent persistent;

  /** The implementation behind the library, from {@code MPI_Get_library_version}: "Open MPI", "MPICH" or "". */
  String implementation() {
    return implementationOf(version);
  }

  static String implementationOf(String libraryVersion) {
    for (Libraries.Implementation i : Libraries.Implementation.values()) {
      if (libraryVersion.contains(i.label)) {
        return i.label;
      }
    }
    return "";
  }

  /** How this library is driven, for doctor and logs: e.g. "the MPI 5.0 standard ABI (ABI 1.0 of the library)". */
  String mode() {
    return kind == Kind.STANDARD_ABI ? kind.description + " (the library reports ABI " + abiVersion + ")"
        : kind.description + " (implementation tables)";
  }

  /** {@code MPI_Abi_get_version}'s answer, or null where the library lacks the function. */
  private int[] standardAbiVersion() {
    if (lookup.find("MPI_Abi_get_version").isEmpty()) {
      return null;
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment major = arena.allocate(JAVA_INT);
      MemorySegment minor = arena.allocate(JAVA_INT);
      major.set(JAVA_INT, 0, -1);
      minor.set(JAVA_INT, 0, -1);
      int rc = (int) call("MPI_Abi_get_version", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), major, minor);
      return rc == SUCCESS ? new int[] {major.get(JAVA_INT, 0), minor.get(JAVA_INT, 0)} : null;
    }
  }

  /** A downcall returning int whose handle parameters (null layouts) take a {@code long}. */
  private MethodHandle exact(String name, MemoryLayout... layouts) {
    MemoryLayout[] real = layouts.clone();
    for (int i = 0; i < real.length; i++) {
      if (real[i] == null) {
        real[i] = table.handle();
      }
    }
    MethodHandle mh = linker.downcallHandle(
        lookup.find(name).orElseThrow(() -> new IllegalStateException(library + " lacks " + name)),
        FunctionDescriptor.of(JAVA_INT, real));
    for (int i = 0; i < layouts.length; i++) {
      if (layouts[i] == null) {
        mh = pointerHandles ? MethodHandles.filterArguments(mh, i, OF_ADDRESS)
            : MethodHandles.explicitCastArguments(mh, mh.type().changeParameterType(i, long.class));
      }
    }
    return mh;
  }

  private static final MethodHandle OF_ADDRESS;

  static {
    try {
      OF_ADDRESS = MethodHandles.publicLookup().findStatic(MemorySegment.class, "ofAddress",
          MethodType.methodType(MemorySegment.class, long.class));
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  int bcast(MemorySegment buffer, int count, long type, int root, long comm) {
    try {
      return (int) bcast.invokeExact(buffer, count, type, root, comm);
    } catch (Throwable t) {
      throw rethrow("MPI_Bcast", t);
    }
  }

  int ibcast(MemorySegment buffer, int count, long type, int root, long comm, MemorySegment request) {
    try {
      return (int) ibcast.invokeExact(buffer, count, type, root, comm, request);
    } catch (Throwable t) {
      throw rethrow("MPI_Ibcast", t);
    }
  }

  int iallreduce(MemorySegment in, MemorySegment out, int count, long type, long op, long comm, MemorySegment request) {
    try {
      return (int) iallreduce.invokeExact(in, out, count, type, op, comm, request);
    } catch (Throwable t) {
      throw rethrow("MPI_Iallreduce", t);
    }
  }

  int allreduce(MemorySegment in, MemorySegment out, int count, long type, long op, long comm) {
    try {
      return (int) allreduce.invokeExact(in, out, count, type, op, comm);
    } catch (Throwable t) {
      throw rethrow("MPI_Allreduce", t);
    }
  }

  int isend(MemorySegment buffer, int count, long type, int dest, int tag, long comm, MemorySegment request) {
    try {
      return (int) isend.invokeExact(buffer, count, type, dest, tag, comm, request);
    } catch (Throwable t) {
      throw rethrow("MPI_Isend", t);
    }
  }

  int irecv(MemorySegment buffer, int count, long type, int source, int tag, long comm, MemorySegment request) {
    try {
      return (int) irecv.invokeExact(buffer, count, type, source, tag, comm, request);
    } catch (Throwable t) {
      throw rethrow("MPI_Irecv", t);
    }
  }

  int send(MemorySegment buffer, int count, long type, int dest, int tag, long comm) {
    try {
      return (int) send.invokeExact(buffer, count, type, dest, tag, comm);
    } catch (Throwable t) {
      throw rethrow("MPI_Send", t);
    }
  }

  int recv(MemorySegment buffer, int count, long type, int source, int tag, long comm) {
    try {
      return (int) recv.invokeExact(buffer, count, type, source, tag, comm, table.statusIgnore());
    } catch (Throwable t) {
      throw rethrow("MPI_Recv", t);
    }
  }

  int test(MemorySegment request, MemorySegment flag) {
    try {
      return (int) test.invokeExact(request, flag, table.statusIgnore());
    } catch (Throwable t) {
      throw rethrow("MPI_Test", t);
    }
  }

  int waitFor(MemorySegment request) {
    try {
      return (int) waitFor.invokeExact(request, table.statusIgnore());
    } catch (Throwable t) {
      throw rethrow("MPI_Wait", t);
    }
  }

  int start(MemorySegment request) {
    try {
      return (int) start.invokeExact(request);
    } catch (Throwable t) {
      throw rethrow("MPI_Start", t);
    }
  }

  private static RuntimeException rethrow(String name, Throwable t) {
    if (t instanceof RuntimeException r) {
      return r;
    }
    if (t instanceof Error e) {
      throw e;
    }
    return new IllegalStateException(name + " failed: " + t, t);
  }

  /**
   * Opens the first candidate that loads and suits ({@link Libraries#refusal}); throws naming every candidate
   * and why it was passed over if none does. The result's {@link #choice} says why it was taken.
   */
  static MpiC open(List<Libraries.Candidate> candidates, Libraries.Abi abi, Libraries.Implementation launcher,
      String origin) {
    StringBuilder why = new StringBuilder();
    for (Libraries.Candidate c : candidates) {
      // A library passed over is closed again (dlclose): only the one taken stays in the process.
      Arena arena = Arena.ofShared();
      MpiC m;
      try {
        m = new MpiC(c.library(), SymbolLookup.libraryLookup(c.library(), arena));
      } catch (IllegalArgumentException | IllegalStateException e) {
        arena.close();
        why.append("\n  ").append(c.library()).append(": ").append(e.getMessage());
        continue;
      }
      String refusal = Libraries.refusal(c, abi, m.kind == Kind.STANDARD_ABI, m.implementation(), launcher);
      if (refusal != null) {
        arena.close();
        why.append("\n  ").append(c.library()).append(": ").append(refusal);
        continue;
      }
      m.choice = origin + "; MPI_BUILD_MPI_ABI=" + abi.name().toLowerCase(Locale.ROOT)
          + (why.isEmpty() ? "" : "; passed over:" + why.toString().replace("\n ", ""));
      return m;
    }
    throw new IllegalStateException("no MPI C library could be opened (MPI_BUILD_MPI_ABI="
        + abi.name().toLowerCase(Locale.ROOT) + "):" + why);
  }

  /** Why this library was taken: the launcher, the ABI wanted, and the candidates passed over before it. */
  String choice = "";

  private long symbol(String name) {
    return lookup.find(name).orElseThrow(() -> new IllegalStateException(library + " lacks " + name)).address();
  }

  private String libraryVersion() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment text = arena.allocate(8192);
      MemorySegment length = arena.allocate(JAVA_INT);
      int rc = (int) call("MPI_Get_library_version", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), text, length);
      if (rc != SUCCESS) {
        throw new IllegalStateException("MPI_Get_library_version failed with " + rc);
      }
      byte[] bytes = text.asSlice(0, length.get(JAVA_INT, 0)).toArray(ValueLayout.JAVA_BYTE);
      String version = new String(bytes, StandardCharsets.UTF_8);
      int nul = version.indexOf('\0'); // Open MPI counts the terminating NUL in the length
      return (nul >= 0 ? version.substring(0, nul) : version).strip();
    }
  }

  /** A handle value as the argument the C function takes. */
  Object h(long value) {
    return pointerHandles ? MemorySegment.ofAddress(value) : (Object) (int) value;
  }

  /** Reads a handle that MPI wrote into {@code out}. */
  long read(MemorySegment out) {
    return pointerHandles ? out.get(ADDRESS, 0).address() : out.get(JAVA_INT, 0);
  }

  /** Writes a handle into {@code slot} (from {@link #handleSlot}). */
  void write(MemorySegment slot, long value) {
    if (pointerHandles) {
      slot.set(ADDRESS, 0, MemorySegment.ofAddress(value));
    } else {
      slot.set(JAVA_INT, 0, (int) value);
    }
  }

  /** Memory for one handle, for functions that return one. */
  MemorySegment handleSlot(Arena arena) {
    return arena.allocate((MemoryLayout) table.handle());
  }

  /** Calls a C function of the library with this descriptor; the handle is made once per name and descriptor. */
  Object call(String name, FunctionDescriptor descriptor, Object... args) {
    MethodHandle mh = functions.computeIfAbsent(name + descriptor, k -> linker.downcallHandle(
        lookup.find(name).orElseThrow(() -> new IllegalStateException(library + " lacks " + name)), descriptor));
    try {
      return mh.invokeWithArguments(args);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(name + " failed: " + t, t);
    }
  }

  /** Calls an MPI function returning an error code, with {@code H} meaning the handle layout. */
  int mpi(String name, Object... argsAndLayouts) {
    int n = argsAndLayouts.length / 2;
    MemoryLayout[] layouts = new MemoryLayout[n];
    Object[] args = new Object[n];
    for (int i = 0; i < n; i++) {
      Object layout = argsAndLayouts[2 * i];
      layouts[i] = layout == H ? table.handle() : (MemoryLayout) layout;
      args[i] = argsAndLayouts[2 * i + 1];
    }
    return (int) call(name, FunctionDescriptor.of(JAVA_INT, layouts), args);
  }

  /** Placeholder for the handle layout in {@link #mpi}. */
  static final Object H = new Object();

  /** The message for an MPI error code ({@code MPI_Error_string}). */
  String errorString(int code) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment text = arena.allocate(1024);
      MemorySegment length = arena.allocate(JAVA_INT);
      int rc = mpi("MPI_Error_string", JAVA_INT, code, ADDRESS, text, ADDRESS, length);
      if (rc != SUCCESS) {
        return "MPI error " + code;
      }
      return new String(text.asSlice(0, length.get(JAVA_INT, 0)).toArray(ValueLayout.JAVA_BYTE),
          StandardCharsets.UTF_8);
    }
  }
}
