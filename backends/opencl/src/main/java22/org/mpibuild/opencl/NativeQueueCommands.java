package org.mpibuild.opencl;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jocl.CL;
import org.jocl.NativePointerObject;
import org.jocl.cl_command_queue;
import org.jocl.cl_event;
import org.jocl.cl_mem;
import org.mpibuild.streams.DeviceFailure;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link QueueCommands} through Java's FFM API (Java 22 and later; loaded by name, only there): one upcall stub
 * for the whole JVM is the native kernel's function, and the kernel's arguments carry the id of what it runs
 * and, put there by the device, the buffer's memory. An FFM upcall attaches the driver's thread to the JVM once
 * and keeps it attached, where JOCL's callbacks attach and detach it for every call.
 */
final class NativeQueueCommands implements QueueCommands {
  private static final Logger LOG = LoggerFactory.getLogger(NativeQueueCommands.class);
  /** The native kernel's arguments: the id of what it runs, then the buffer (memory, once the device has put it). */
  private static final long ARGS_BYTES = 16;
  private static final long MEMORY_OFFSET = 8;
  private static final AtomicLong IDS = new AtomicLong();
  /** What the enqueued commands run, by id: removed when the command runs, or forgotten when it never will. */
  private static final Map<Long, Pending> PENDING = new ConcurrentHashMap<>();
  private static volatile Object instance;

  private record Pending(long offset, int bytes, Consumer<ByteBuffer> body) {}

  /** The native memory of one call, reused by the thread that enqueues (the device copies what it keeps). */
  private static final class CallMemory {
    final MemorySegment args;
    final MemorySegment memList;
    final MemorySegment memLocation;
    final MemorySegment eventOut;

    CallMemory() {
      Arena arena = Arena.ofAuto(); // freed with this object, when its thread has gone
      args = arena.allocate(ARGS_BYTES, 8);
      memList = arena.allocate(ADDRESS);
      memLocation = arena.allocate(ADDRESS);
      memLocation.set(ADDRESS, 0, args.asSlice(MEMORY_OFFSET));
      eventOut = arena.allocate(ADDRESS);
    }
  }

  private static final ThreadLocal<CallMemory> CALL_MEMORY = ThreadLocal.withInitial(CallMemory::new);

  private final MethodHandle enqueueNativeKernel;
  private final MemorySegment function;
  private final Field pointer;

  private NativeQueueCommands() throws ReflectiveOperationException {
    Linker linker = Linker.nativeLinker();
    MemorySegment symbol = openCl().find("clEnqueueNativeKernel")
        .orElseThrow(() -> new IllegalStateException("the OpenCL library has no clEnqueueNativeKernel"));
    // cl_int clEnqueueNativeKernel(queue, void (*)(void *), void *args, size_t cb_args, cl_uint num_mem_objects,
    //     const cl_mem *mem_list, const void **args_mem_loc, cl_uint num_events, const cl_event *wait, cl_event *event)
    enqueueNativeKernel = linker.downcallHandle(symbol, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS,
        JAVA_LONG, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS));
    function = linker.upcallStub(MethodHandles.lookup().findStatic(NativeQueueCommands.class, "run",
        MethodType.methodType(void.class, MemorySegment.class)), FunctionDescriptor.ofVoid(ADDRESS), Arena.global());
    pointer = NativePointerObject.class.getDeclaredField("nativePointer");
    pointer.setAccessible(true);
  }

  /**
   * Called by name from {@link QueueCommands.Loader}.
   *
   * @return the JVM's instance, or a String saying why there is none
   */
  public static synchronized Object open() {
    if (instance == null) {
      String problem = NativeAccess.problem(NativeQueueCommands.class);
      if (problem != null) {
        instance = problem;
      } else {
        try {
          instance = new NativeQueueCommands();
        } catch (ReflectiveOperationException | RuntimeException e) {
          instance = "the native kernel could not be set up: " + e;
        }
      }
    }
    return instance;
  }

  private static SymbolLookup openCl() {
    String os = System.getProperty("os.name").toLowerCase(java.util.Locale.ROOT);
    String[] names = os.contains("win") ? new String[] {"OpenCL.dll"}
        : os.contains("mac") ? new String[] {"/System/Library/Frameworks/OpenCL.framework/OpenCL"}
        : new String[] {"libOpenCL.so.1", "libOpenCL.so"};
    IllegalArgumentException last = null;
    for (String name : names) {
      try {
        return SymbolLookup.libraryLookup(name, Arena.global());
      } catch (IllegalArgumentException e) {
        last = e;
      }
    }
    throw new IllegalStateException("no OpenCL library (" + String.join(", ", names) + ")", last);
  }

  @Override
  public Enqueued enqueue(cl_command_queue queue, cl_mem buffer, long offset, int bytes, Consumer<ByteBuffer> body) {
    long id = IDS.incrementAndGet();
    PENDING.put(id, new Pending(offset, bytes, body));
    int rc;
    long event;
    try {
      // the device copies the arguments when the command is enqueued, and puts the buffer's memory in place of
      // the handle at MEMORY_OFFSET of its copy
      CallMemory m = CALL_MEMORY.get();
      MemorySegment mem = MemorySegment.ofAddress(address(buffer));
      m.args.set(JAVA_LONG, 0, id);
      m.args.set(ADDRESS, MEMORY_OFFSET, mem);
      m.memList.set(ADDRESS, 0, mem);
      rc = (int) enqueueNativeKernel.invokeExact(MemorySegment.ofAddress(address(queue)), function, m.args,
          ARGS_BYTES, 1, m.memList, m.memLocation, 0, MemorySegment.NULL, m.eventOut);
      event = m.eventOut.get(ADDRESS, 0).address();
    } catch (Throwable t) {
      PENDING.remove(id);
      throw new DeviceFailure("clEnqueueNativeKernel could not be called: " + t, CL.CL_INVALID_OPERATION);
    }
    if (rc != CL.CL_SUCCESS) {
      PENDING.remove(id);
      throw new DeviceFailure("clEnqueueNativeKernel failed: " + CL.stringFor_errorCode(rc), rc);
    }
    cl_event e = new cl_event();
    try {
      pointer.setLong(e, event);
    } catch (IllegalAccessException impossible) {
      throw new IllegalStateException(impossible);
    }
    return new Enqueued(e, id);
  }

  @Override
  public void forget(long id) {
    PENDING.remove(id);
  }

  private long address(NativePointerObject o) {
    try {
      return pointer.getLong(o);
    } catch (IllegalAccessException impossible) {
      throw new IllegalStateException(impossible);
    }
  }

  /** The native kernel's function, on the thread that runs the queue's commands. Never throws: the JVM would stop. */
  private static void run(MemorySegment args) {
    try {
      MemorySegment a = args.reinterpret(ARGS_BYTES);
      Pending p = PENDING.remove(a.get(JAVA_LONG, 0));
      if (p != null) {
        MemorySegment memory = MemorySegment.ofAddress(a.get(ADDRESS, MEMORY_OFFSET).address() + p.offset);
        p.body.accept(memory.reinterpret(p.bytes).asByteBuffer());
      }
    } catch (Throwable t) {
      try {
        LOG.error("a stream-ordered collective on the device's queue threw; its future fails or has failed", t);
      } catch (Throwable ignored) {
        // nothing may leave an upcall
      }
    }
  }
}
