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
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * The MPI C library as seen through the Foreign Function and Memory API, for one implementation. Handles
 * differ: Open MPI's are pointers to exported objects ({@code MPI_COMM_WORLD} is {@code &ompi_mpi_comm_world}),
 * MPICH's are integer constants. Both are kept here as {@code long}s and passed with the implementation's
 * layout; the constant table is chosen from {@code MPI_Get_library_version}.
 */
final class MpiC {
  /** An MPI implementation and its constants. */
  enum Kind {
    OPEN_MPI, MPICH
  }

  static final int SUCCESS = 0;

  final String library;
  final Kind kind;
  final String version;
  final ValueLayout handle;
  final long commWorld;
  final long byteType;
  final long intType;
  final long opMax;
  final long infoNull;
  final long errorsReturn;
  final int commTypeShared;
  /** {@code MPI_STATUS_IGNORE}: NULL in Open MPI, (MPI_Status *) 1 in MPICH. */
  final MemorySegment statusIgnore;

  private final Linker linker = Linker.nativeLinker();
  private final SymbolLookup lookup;
  private final Map<String, MethodHandle> functions = new HashMap<>();

  // The calls on the path of every broadcast, bound once with exact types (handles as long) so that the
  // JIT compiles them to a direct call; the rest go through the generic, slower mpi(...).
  private MethodHandle bcast;
  private MethodHandle ibcast;
  private MethodHandle iallreduce;
  private MethodHandle test;
  private MethodHandle waitFor;

  private MpiC(String library, SymbolLookup lookup) {
    this.library = library;
    this.lookup = lookup;
    this.version = libraryVersion();
    if (version.contains("Open MPI")) {
      kind = Kind.OPEN_MPI;
      handle = ADDRESS;
      commWorld = symbol("ompi_mpi_comm_world");
      byteType = symbol("ompi_mpi_byte");
      intType = symbol("ompi_mpi_int");
      opMax = symbol("ompi_mpi_op_max");
      infoNull = symbol("ompi_mpi_info_null");
      errorsReturn = symbol("ompi_mpi_errors_return");
      commTypeShared = 0;
      statusIgnore = MemorySegment.NULL;
    } else if (version.contains("MPICH")) {
      kind = Kind.MPICH;
      handle = JAVA_INT;
      commWorld = 0x44000000;
      byteType = 0x4c00010d;
      intType = 0x4c000405;
      opMax = 0x58000001;
      infoNull = 0x1c000000;
      errorsReturn = 0x54000001;
      commTypeShared = 1;
      statusIgnore = MemorySegment.ofAddress(1);
    } else {
      throw new IllegalStateException(library + " is neither Open MPI nor MPICH: " + version);
    }
    bcast = exact("MPI_Bcast", ADDRESS, JAVA_INT, null, JAVA_INT, null);
    ibcast = exact("MPI_Ibcast", ADDRESS, JAVA_INT, null, JAVA_INT, null, ADDRESS);
    iallreduce = exact("MPI_Iallreduce", ADDRESS, ADDRESS, JAVA_INT, null, null, null, ADDRESS);
    test = exact("MPI_Test", ADDRESS, ADDRESS, ADDRESS);
    waitFor = exact("MPI_Wait", ADDRESS, ADDRESS);
  }

  /** A downcall returning int whose handle parameters (null layouts) take a {@code long}. */
  private MethodHandle exact(String name, MemoryLayout... layouts) {
    MemoryLayout[] real = layouts.clone();
    for (int i = 0; i < real.length; i++) {
      if (real[i] == null) {
        real[i] = handle;
      }
    }
    MethodHandle mh = linker.downcallHandle(
        lookup.find(name).orElseThrow(() -> new IllegalStateException(library + " lacks " + name)),
        FunctionDescriptor.of(JAVA_INT, real));
    for (int i = 0; i < layouts.length; i++) {
      if (layouts[i] == null) {
        mh = kind == Kind.OPEN_MPI ? java.lang.invoke.MethodHandles.filterArguments(mh, i, OF_ADDRESS)
            : java.lang.invoke.MethodHandles.explicitCastArguments(mh, mh.type().changeParameterType(i, long.class));
      }
    }
    return mh;
  }

  private static final MethodHandle OF_ADDRESS;

  static {
    try {
      OF_ADDRESS = java.lang.invoke.MethodHandles.publicLookup().findStatic(MemorySegment.class, "ofAddress",
          java.lang.invoke.MethodType.methodType(MemorySegment.class, long.class));
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

  int test(MemorySegment request, MemorySegment flag) {
    try {
      return (int) test.invokeExact(request, flag, statusIgnore);
    } catch (Throwable t) {
      throw rethrow("MPI_Test", t);
    }
  }

  int waitFor(MemorySegment request) {
    try {
      return (int) waitFor.invokeExact(request, statusIgnore);
    } catch (Throwable t) {
      throw rethrow("MPI_Wait", t);
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

  /** Opens the first library of {@code candidates} that loads; throws naming them all if none does. */
  static MpiC open(String... candidates) {
    StringBuilder why = new StringBuilder();
    for (String name : candidates) {
      try {
        return new MpiC(name, SymbolLookup.libraryLookup(name, Arena.global()));
      } catch (IllegalArgumentException | IllegalStateException e) {
        why.append("\n  ").append(name).append(": ").append(e.getMessage());
      }
    }
    throw new IllegalStateException("no MPI C library could be opened:" + why);
  }

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
      return new String(bytes, StandardCharsets.UTF_8).strip();
    }
  }

  /** A handle value as the argument the C function takes. */
  Object h(long value) {
    return kind == Kind.OPEN_MPI ? MemorySegment.ofAddress(value) : (Object) (int) value;
  }

  /** Reads a handle that MPI wrote into {@code out}. */
  long read(MemorySegment out) {
    return kind == Kind.OPEN_MPI ? out.get(ADDRESS, 0).address() : out.get(JAVA_INT, 0);
  }

  /** Memory for one handle, for functions that return one. */
  MemorySegment handleSlot(Arena arena) {
    return arena.allocate((MemoryLayout) handle);
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
      layouts[i] = layout == H ? handle : (MemoryLayout) layout;
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
