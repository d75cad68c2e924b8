package org.mpibuild.opencl;

import static org.jocl.CL.CL_COMPLETE;
import static org.jocl.CL.CL_EVENT_COMMAND_EXECUTION_STATUS;
import static org.jocl.CL.CL_FALSE;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.clEnqueueReadBuffer;
import static org.jocl.CL.clEnqueueUnmapMemObject;
import static org.jocl.CL.clEnqueueWriteBuffer;
import static org.jocl.CL.clGetEventInfo;
import static org.jocl.CL.clReleaseEvent;
import static org.jocl.CL.clRetainEvent;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_event;
import org.jocl.cl_mem;

/**
 * The non-blocking transfers of {@link QueueSteps} (a read, a write, an unmap), without a thread each.
 *
 * <p>JOCL 2.0.5 keeps the host buffer of every non-blocking read or write and of every unmap reachable until the
 * command has run by handing a task to a thread pool of its own, with no bound ({@code CL.scheduleReferenceRelease}):
 * a thread blocks in {@code clWaitForEvents} for each command in flight, and one is created whenever none is idle.
 * An operation behind a gate keeps its thread until the gate opens, so every operation enqueued ahead costs a
 * thread's creation, and each one's end a thread's wake-up: measured on 2 cores with PoCL, a chain of 2000
 * {@code allreduceAfter} on one rank started about 1500 threads ("AsyncOpThread-N").
 *
 * <p>Here the transfers call JOCL's own native methods behind those wrappers, and this object keeps the buffer
 * reachable instead: each enqueue drops the buffers of the commands that have completed (the queue is in order,
 * so from the oldest), and {@link #close} hands what is left to a list that later enqueues sweep, so a buffer is
 * never released while a command may still use it. Where a JOCL without those natives is found, JOCL's own calls
 * run, as before.
 */
final class HeldTransfers {
  /** {@code clEnqueueReadBufferNative}, {@code clEnqueueWriteBufferNative}, {@code clEnqueueUnmapMemObjectNative}. */
  private static final MethodHandle READ;
  private static final MethodHandle WRITE;
  private static final MethodHandle UNMAP;
  /** The buffers of closed instances' commands that had not completed. */
  private static final List<Held> ORPHANS = new ArrayList<>();

  static {
    MethodHandle read = null;
    MethodHandle write = null;
    MethodHandle unmap = null;
    try {
      MethodHandles.Lookup jocl = MethodHandles.privateLookupIn(CL.class, MethodHandles.lookup());
      MethodType transfer = MethodType.methodType(int.class, cl_command_queue.class, cl_mem.class, boolean.class,
          long.class, long.class, Pointer.class, int.class, cl_event[].class, cl_event.class);
      read = jocl.findStatic(CL.class, "clEnqueueReadBufferNative", transfer);
      write = jocl.findStatic(CL.class, "clEnqueueWriteBufferNative", transfer);
      unmap = jocl.findStatic(CL.class, "clEnqueueUnmapMemObjectNative", MethodType.methodType(int.class,
          cl_command_queue.class, cl_mem.class, ByteBuffer.class, int.class, cl_event[].class, cl_event.class));
    } catch (ReflectiveOperationException | RuntimeException e) {
      read = null; // another JOCL: its public calls, with a thread each
      write = null;
      unmap = null;
    }
    READ = read;
    WRITE = write;
    UNMAP = unmap;
  }

  /** A command's event, retained, and the host buffer it uses. */
  private record Held(cl_event event, Object buffer) {}

  private final ArrayDeque<Held> held = new ArrayDeque<>();

  /** @return whether the transfers run without JOCL's thread per command (its natives were found) */
  static boolean direct() {
    return UNMAP != null;
  }

  /** A non-blocking read of the first {@code bytes} of {@code buffer} into {@code into}. */
  int read(cl_command_queue queue, cl_mem buffer, long bytes, ByteBuffer into, cl_event event) {
    if (READ == null) {
      return clEnqueueReadBuffer(queue, buffer, CL_FALSE, 0, bytes, Pointer.to(into), 0, null, event);
    }
    return hold(transfer(READ, queue, buffer, bytes, Pointer.to(into), null, event), event, into);
  }

  /** A non-blocking write of {@code from} to the start of {@code buffer} once {@code gate} is complete. */
  int write(cl_command_queue queue, cl_mem buffer, long bytes, ByteBuffer from, cl_event gate, cl_event event) {
    cl_event[] wait = {gate};
    if (WRITE == null) {
      return clEnqueueWriteBuffer(queue, buffer, CL_FALSE, 0, bytes, Pointer.to(from), 1, wait, event);
    }
    return hold(transfer(WRITE, queue, buffer, bytes, Pointer.to(from), wait, event), event, from);
  }

  /** The unmap of {@code mapped} once the events of {@code wait} are complete (none: at once). */
  int unmap(cl_command_queue queue, cl_mem buffer, ByteBuffer mapped, cl_event[] wait, cl_event event) {
    int n = wait == null ? 0 : wait.length;
    if (UNMAP == null) {
      return clEnqueueUnmapMemObject(queue, buffer, mapped, n, wait, event);
    }
    cl_event out = event != null ? event : new cl_event();
    int rc;
    try {
      rc = (int) UNMAP.invokeExact(queue, buffer, mapped, n, wait, out);
    } catch (Throwable t) {
      throw rethrown(t);
    }
    rc = hold(rc, out, mapped);
    if (event == null && rc == CL_SUCCESS) {
      clReleaseEvent(out); // held retained it
    }
    return rc;
  }

  /** Hands what is still held to the list that later enqueues sweep. */
  void close() {
    synchronized (ORPHANS) {
      synchronized (held) {
        ORPHANS.addAll(held);
        held.clear();
      }
    }
  }

  /** How many commands' buffers this instance holds (for tests). */
  int holding() {
    synchronized (held) {
      return held.size();
    }
  }

  /** A non-blocking read or write through JOCL's native method {@code h}, from the buffer's start. */
  private static int transfer(MethodHandle h, cl_command_queue queue, cl_mem buffer, long bytes, Pointer host,
      cl_event[] wait, cl_event event) {
    try {
      return (int) h.invokeExact(queue, buffer, false, 0L, bytes, host, wait == null ? 0 : wait.length, wait, event);
    } catch (Throwable t) {
      throw rethrown(t);
    }
  }

  private static RuntimeException rethrown(Throwable t) {
    if (t instanceof RuntimeException r) {
      return r;
    }
    if (t instanceof Error e) {
      throw e;
    }
    return new IllegalStateException(t);
  }

  /** After an enqueue: drops the completed commands' buffers, and holds {@code buffer} if {@code rc} succeeded. */
  private int hold(int rc, cl_event event, Object buffer) {
    synchronized (held) {
      while (!held.isEmpty() && ended(held.peekFirst().event())) {
        clReleaseEvent(held.pollFirst().event());
      }
      if (rc == CL_SUCCESS) {
        clRetainEvent(event);
        held.addLast(new Held(event, buffer));
      }
    }
    synchronized (ORPHANS) {
      ORPHANS.removeIf(h -> {
        if (!ended(h.event())) {
          return false;
        }
        clReleaseEvent(h.event());
        return true;
      });
    }
    return rc;
  }

  /** Whether a command has completed or failed: its host buffer is no longer used. */
  private static boolean ended(cl_event event) {
    int[] status = new int[1];
    int rc = clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, Sizeof.cl_int, Pointer.to(status), null);
    return rc == CL_SUCCESS && (status[0] == CL_COMPLETE || status[0] < 0);
  }
}
