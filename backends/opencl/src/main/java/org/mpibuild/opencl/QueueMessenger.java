package org.mpibuild.opencl;

import static org.jocl.CL.CL_COMPLETE;
import static org.jocl.CL.CL_EVENT_COMMAND_EXECUTION_STATUS;
import static org.jocl.CL.CL_FALSE;
import static org.jocl.CL.CL_INVALID_OPERATION;
import static org.jocl.CL.CL_INVALID_VALUE;
import static org.jocl.CL.CL_MAP_READ;
import static org.jocl.CL.CL_MEM_ASSOCIATED_MEMOBJECT;
import static org.jocl.CL.CL_MEM_OFFSET;
import static org.jocl.CL.CL_MEM_SIZE;
import static org.jocl.CL.CL_MAP_WRITE;
import static org.jocl.CL.CL_QUEUE_CONTEXT;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.clCreateUserEvent;
import static org.jocl.CL.clEnqueueMapBuffer;
import static org.jocl.CL.clEnqueueReadBuffer;
import static org.jocl.CL.clEnqueueUnmapMemObject;
import static org.jocl.CL.clEnqueueWriteBuffer;
import static org.jocl.CL.clFlush;
import static org.jocl.CL.clGetCommandQueueInfo;
import static org.jocl.CL.clGetEventInfo;
import static org.jocl.CL.clGetMemObjectInfo;
import static org.jocl.CL.clReleaseEvent;
import static org.jocl.CL.clSetEventCallback;
import static org.jocl.CL.clSetUserEventStatus;
import static org.mpibuild.streams.StreamOrderedMessages.NOTHING_QUEUED;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.jocl.CL;
import org.jocl.CLException;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_event;
import org.jocl.cl_mem;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;
import org.mpibuild.spi.UseGuard;
import org.mpibuild.streams.DeviceFailure;
import org.mpibuild.streams.StreamOrderedMessages;
import org.mpibuild.streams.StreamOrderedMessages.Refused;

/**
 * MPI messages ordered with an OpenCL command queue, with no host synchronization in between:
 *
 * <pre>{@code
 * try (QueueMessenger messenger = QueueMessenger.open(comm, queue)) {
 *   clEnqueueNDRangeKernel(queue, produce, ...);            // fills buffer
 *   messenger.sendAfter(buffer, bytes, right, 0);            // sent once produce has finished
 *   messenger.receiveBefore(buffer, bytes, left, 0);         // kernels enqueued after this see the data
 *   clEnqueueNDRangeKernel(queue, consume, ...);
 * }
 * }</pre>
 *
 * <p><b>On the queue itself.</b> On Java 22 or later with native access enabled, on a device that runs native
 * kernels (PoCL's CPU device), every call enqueues one native kernel whose function is a Java upcall (FFM API):
 * when the queue reaches it, the operation runs on the thread that runs the queue's commands, between the work
 * queued before and after it, with nothing else in between. {@link #operationsRun()} says whether a messenger
 * does, and why not where it does not (at most the device's compute units less one messengers of a process do:
 * a waiting operation holds a device thread). {@code MPI_BUILD_OPENCL_ON_QUEUE=false} turns it off. Elsewhere
 * (GPUs, Java 17), the calls work through the progress thread, as follows; the two ways mix freely across
 * ranks and messengers.
 *
 * <p>{@link #sendAfter} enqueues a non-blocking read of the buffer into a direct staging buffer behind the
 * work already on the queue; a progress thread waits for that read (by polling its event, never in a
 * callback) and then starts the MPI send. {@link #receiveBefore} enqueues a non-blocking write from a
 * staging buffer, held back by a user event; the progress thread receives the message, then completes the
 * user event, and the write and everything queued after it run. Both return at once.
 *
 * <p><b>Collectives.</b> {@link #bcastAfter} and {@link #allreduceAfter} work the same way, in place on a
 * device buffer: the MPI operation starts once the work queued before has produced the buffer, and the
 * work queued after waits (behind a user event) until the result is on the device. Ranks must enqueue the
 * same collectives in the same order on a communicator, as with MPI; every messenger of a process on the
 * same {@link Communicator} object starts its collectives in the order they were enqueued across all of
 * them, so two queues of one rank cannot reorder each other's collectives. A device failure on one rank
 * fails the collective on every rank with one message naming that rank; a rank that never starts a
 * collective is named by rank 0 past the deadline given to {@link #open(Communicator, cl_command_queue,
 * Duration)}, which then aborts the job. Tag {@value StreamOrderedMessages#ARRIVAL_TAG} is reserved on the
 * communicator for the arrival messages that make this possible.
 *
 * <p>The queue must be in order (the default). MPI must provide {@code MPI_THREAD_MULTIPLE}. Futures fail,
 * never hang, on MPI or device errors; {@link #close()} fails what is still in flight and releases the
 * device work waiting for it with an error.
 *
 * <p><b>After close.</b> A messenger on the queue of an {@link org.mpibuild.MpiBuild} ({@link OpenClKernel#queue()})
 * is closed by it, before the queue is released. Once the messenger or its MpiBuild is closed,
 * {@link #sendAfter} and {@link #receiveBefore} throw {@code IllegalStateException} naming the messenger and
 * why ("messenger on queue ...: its MpiBuild was closed") and enqueue nothing; a close on another thread
 * waits for the enqueue in progress. A messenger on a queue the program made itself must be closed before
 * that queue is released.
 *
 * <p>The four calls are synchronized: two threads enqueueing on one messenger hand the engine their operations
 * in the queue's order.
 */
public final class QueueMessenger implements AutoCloseable {
  private final cl_command_queue queue;
  private final cl_context context;
  private final Communicator comm;
  private final StreamOrderedMessages messages;
  private final UseGuard guard;
  /** The backend whose queue this is, which closes the messenger before it releases the queue; or null. */
  private final OpenClBackend owner;
  private final UseGuard.Dependent dependent = this::close;
  /** Runs operations on the queue itself, or null where they go through the progress thread ({@link #operationsRun}). */
  private final QueueCommands commands;
  private final QueueCommands.Choice choice;
  private final String operationsRun;

  private QueueMessenger(cl_command_queue queue, cl_context context, Communicator comm,
      StreamOrderedMessages messages, OpenClBackend owner) {
    QueueCommands.Choice choice = QueueCommands.forQueue(queue);
    this.choice = choice;
    this.commands = choice.commands();
    this.operationsRun = choice.why();
    this.queue = queue;
    this.context = context;
    this.comm = comm;
    this.messages = messages;
    this.guard = new UseGuard("messenger on queue " + queue);
    this.owner = owner;
  }

  /**
   * Binds a helper to a communicator and an in-order command queue.
   *
   * @param comm the communicator, for example {@code MpiJava.communicator(MPI.COMM_WORLD)}; the caller closes it
   * @param queue the command queue: an MpiBuild's ({@link OpenClKernel#queue()}), which closes the helper
   *     when it closes, or the program's own, which must outlive the helper
   * @return the helper, with its progress thread started
   * @throws IllegalStateException if MPI does not provide MPI_THREAD_MULTIPLE
   */
  public static QueueMessenger open(Communicator comm, cl_command_queue queue) {
    return open(comm, queue, StreamOrderedMessages.DEFAULT_DEADLINE);
  }

  /**
   * Binds a helper to a communicator and an in-order command queue, with a deadline for collectives.
   *
   * @param comm the communicator; the caller closes it. Collectives are ordered with those of every other
   *     messenger on the same object
   * @param queue the command queue, as for {@link #open(Communicator, cl_command_queue)}
   * @param deadline how long a collective waits, once this rank has started it, for every rank to start it
   *     before rank 0 names the absent ranks and aborts the job; {@link Duration#ZERO} waits for ever
   * @return the helper, with its progress thread started
   * @throws IllegalStateException if MPI does not provide MPI_THREAD_MULTIPLE
   */
  public static QueueMessenger open(Communicator comm, cl_command_queue queue, Duration deadline) {
    OpenClBackend owner = OpenClBackend.owning(queue);
    // inside a use of the owner: its close waits until the messenger is registered, then closes it
    try (UseGuard.Use ignored = owner == null ? null : owner.guard().enter()) {
      cl_context[] context = {new cl_context()};
      int rc = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, Sizeof.cl_context, Pointer.to(context[0]), null);
      if (rc != CL_SUCCESS) {
        throw new IllegalArgumentException("not a usable command queue: " + CL.stringFor_errorCode(rc));
      }
      QueueMessenger m = new QueueMessenger(queue, context[0], comm, new StreamOrderedMessages(comm, queue.toString(), deadline,
          CL::stringFor_errorCode), owner);
      if (owner != null) {
        owner.guard().adopt(m.dependent);
      }
      return m;
    }
  }

  /**
   * Sends the first {@code bytes} of {@code buffer} to {@code dest} as they are once the work already
   * enqueued on the queue has finished. Returns at once.
   *
   * @param buffer the device buffer
   * @param bytes how many bytes, from its start
   * @param dest the receiving rank
   * @param tag the message tag
   * @return completes when the message is sent and the buffer may be overwritten by later work
   * @throws IllegalStateException if the messenger or its MpiBuild is closed
   */
  public synchronized CompletableFuture<Void> sendAfter(cl_mem buffer, long bytes, int dest, int tag) {
    try (UseGuard.Use ignored = guard.enter()) {
      if (commands != null) {
        int n = StreamOrderedMessages.messageBytes(bytes);
        return onQueue(messages.sendOnQueue(n, dest, tag), buffer, n);
      }
      ByteBuffer staging = staging(bytes);
      return discardingOnFailure(() -> {
        EventStep read = enqueueRead(buffer, bytes, staging);
        flush();
        return messages.send(staging, dest, tag, read);
      }, staging);
    }
  }

  /**
   * Receives {@code bytes} bytes from {@code source} into the start of {@code buffer}, so that work
   * enqueued on the queue after this call sees them. Returns at once.
   *
   * @param buffer the device buffer
   * @param bytes how many bytes the message has
   * @param source the sending rank
   * @param tag the message tag
   * @return completes when the data is in the device buffer
   * @throws IllegalStateException if the messenger or its MpiBuild is closed
   */
  public synchronized CompletableFuture<Void> receiveBefore(cl_mem buffer, long bytes, int source, int tag) {
    try (UseGuard.Use ignored = guard.enter()) {
      if (commands != null) {
        int n = StreamOrderedMessages.messageBytes(bytes);
        return onQueue(messages.receiveOnQueue(n, source, tag), buffer, n);
      }
      ByteBuffer staging = staging(bytes);
      return discardingOnFailure(() -> {
        GatedWrite write = enqueueGatedWrite(buffer, bytes, staging);
        return messages.receive(staging, source, tag, write.gate, write.written);
      }, staging);
    }
  }


  /**
   * Broadcasts the first {@code bytes} of {@code buffer} from {@code root}, in place: on the root, as they are
   * once the work already enqueued has finished; elsewhere, work enqueued after this call sees the root's
   * bytes. Every rank of the communicator calls it, in the same order as its other collectives. Returns at
   * once.
   *
   * @param buffer the device buffer
   * @param bytes how many bytes, from its start, the same on every rank
   * @param root the rank whose bytes are sent
   * @return completes on the root when the broadcast is done, elsewhere when the bytes are on the device;
   *     fails on every rank, with the same message, if the root's read of the buffer failed; a receiver whose
   *     device refused the write fails alone (it still takes part, so that no rank waits for it)
   * @throws IllegalStateException if the messenger or its MpiBuild is closed
   */
  public synchronized CompletableFuture<Void> bcastAfter(cl_mem buffer, long bytes, int root) {
    try (UseGuard.Use ignored = guard.enter()) {
      messages.checkRoot(root);
      int n = StreamOrderedMessages.messageBytes(bytes);
      if (n > Integer.MAX_VALUE - StreamOrderedMessages.BROADCAST_HEADER) {
        throw new IllegalArgumentException("a broadcast of " + bytes + " bytes is too large for one staging buffer");
      }
      if (commands != null) {
        return onQueue(messages.broadcastOnQueue(n, root), buffer, n);
      }
      ByteBuffer staging = messages.staging(StreamOrderedMessages.BROADCAST_HEADER + n);
      ByteBuffer data = staging.slice(StreamOrderedMessages.BROADCAST_HEADER, n);
      return discardingOnFailure(() -> {
        if (comm.rank() == root) {
          StreamOrderedMessages.DeviceStep read = readOrFailure(buffer, bytes, data);
          flush();
          return messages.broadcast(staging, root, read, null, null);
        }
        GatedWrite write;
        try {
          write = enqueueGatedWrite(buffer, bytes, data);
        } catch (DeviceFailure e) {
          return messages.broadcastRefused(n, root, e);
        }
        return messages.broadcast(staging, root, null, write.gate, write.written);
      }, staging);
    }
  }

  /**
   * Reduces the first {@code count} values of {@code type} in {@code buffer} over every rank, in place: the
   * values are taken once the work already enqueued has finished, and work enqueued after this call sees
   * the results. Every rank of the communicator calls it, in the same order as its other collectives.
   * Returns at once.
   *
   * @param buffer the device buffer, holding the values in the device's byte order (the host's)
   * @param count how many values, the same on every rank
   * @param type their type
   * @param op the reduction
   * @return completes when the results are on the device; fails on every rank, with the same message
   *     naming the failing rank, if one rank's read of its buffer failed or was refused (every rank's buffer
   *     then keeps its own values, and the work queued after it is released, not failed: PoCL aborts on a
   *     failed user event)
   * @throws IllegalStateException if the messenger or its MpiBuild is closed
   */
  public synchronized CompletableFuture<Void> allreduceAfter(cl_mem buffer, int count, Datatype type, ReduceOp op) {
    try (UseGuard.Use ignored = guard.enter()) {
      if (count <= 0) {
        throw new IllegalArgumentException("count " + count + " must be 1 or more");
      }
      long bytes = StreamOrderedMessages.messageBytes((long) count * type.bytes());
      if (commands != null) {
        return onQueue(messages.allReduceOnQueue(count, type, op), buffer, (int) bytes);
      }
      MappedRegion region;
      try {
        region = enqueueGatedMap(buffer, bytes);
      } catch (DeviceFailure e) {
        if (e.code() == CL_INVALID_OPERATION) {
          // a driver that refuses a second mapping for writing of a region whose unmap is still queued (the
          // OpenCL specification allows it to): this call stages through host buffers instead
          return stagedAllReduce(buffer, bytes, count, type, op);
        }
        return messages.allReduceRefused(count, type, op, e);
      }
      // in place on the mapped values: nothing allocated or copied on this thread (the progress thread copies
      // them for MPI at the collective's turn); a device that shares host memory (PoCL's CPU device) maps a
      // buffer where it lies
      return messages.allReduce(region.values, region.values, count, type, op, region.mapped, region.gate,
          region.unmapped);
    }
  }

  /**
   * Enqueues an operation that the queue runs itself (a native kernel, {@link QueueCommands}): it starts when
   * the work before it has finished and the work after it starts when it returns. A buffer smaller than the
   * operation, or a command the device refuses, fails it (a collective on every rank).
   */
  private CompletableFuture<Void> onQueue(StreamOrderedMessages.QueuedOperation operation, cl_mem buffer,
      int bytes) {
    BufferShape shape = shape(buffer);
    if (shape.error() != CL_SUCCESS || shape.bytes() < bytes) {
      operation.enqueueFailed(new DeviceFailure(shape.error() != CL_SUCCESS ? "clGetMemObjectInfo failed: "
          + CL.stringFor_errorCode(shape.error()) : "an operation of " + bytes + " bytes on a buffer of "
          + shape.bytes() + " bytes", shape.error() != CL_SUCCESS ? shape.error() : CL_INVALID_VALUE));
      return operation.future();
    }
    QueueCommands.Enqueued command;
    try {
      // a sub-buffer runs on its parent, at its offset: a native kernel sees a buffer's memory from its start
      command = commands.enqueue(queue, shape.parent() != null ? shape.parent() : buffer, shape.offset(), bytes,
          operation::run);
    } catch (DeviceFailure e) {
      operation.enqueueFailed(e);
      return operation.future();
    }
    operation.enqueued(new QueueCommandStep(new EventStep(command.event()), commands, command.id()));
    clFlush(queue); // the command is queued whatever the flush says: the operation goes on
    return operation.future();
  }

  /**
   * The native kernel of an operation on the queue: its event, and, once the engine releases it (the operation
   * ended, whichever way), what the kernel would have run is dropped too, for a kernel that never ran.
   */
  private record QueueCommandStep(EventStep event, QueueCommands commands, long id)
      implements StreamOrderedMessages.DeviceStep {
    @Override
    public boolean finished() {
      return event.finished();
    }

    @Override
    public void release() {
      event.release();
      commands.forget(id);
    }
  }

  /** A buffer's size, its parent and offset in it if it is a sub-buffer, and the error of asking, if any. */
  private record BufferShape(cl_mem buffer, long bytes, cl_mem parent, long offset, int error) {}

  /** The shape of the buffer last asked about: a loop passes the same one every time. */
  private BufferShape lastShape;

  /**
   * The size of a buffer, and its parent and offset if it is a sub-buffer; asked of the device once for the
   * buffer of the previous call.
   */
  private BufferShape shape(cl_mem buffer) {
    BufferShape last = lastShape;
    if (last != null && last.buffer() == buffer) {
      return last;
    }
    long[] size = new long[1];
    long[] offset = new long[1];
    cl_mem parent = new cl_mem();
    int rc = clGetMemObjectInfo(buffer, CL_MEM_SIZE, Sizeof.size_t, Pointer.to(size), null);
    if (rc == CL_SUCCESS) {
      rc = clGetMemObjectInfo(buffer, CL_MEM_ASSOCIATED_MEMOBJECT, Sizeof.cl_mem, Pointer.to(parent), null);
    }
    boolean sub = rc == CL_SUCCESS && !parent.equals(new cl_mem());
    if (sub) {
      rc = clGetMemObjectInfo(buffer, CL_MEM_OFFSET, Sizeof.size_t, Pointer.to(offset), null);
    }
    BufferShape shape = new BufferShape(buffer, size[0], sub ? parent : null, offset[0], rc);
    if (rc == CL_SUCCESS) {
      lastShape = shape;
    }
    return shape;
  }

  /**
   * Says where this messenger's operations run: on the device's queue itself, as native kernels (Java 22 or
   * later with native access enabled, a device that runs native kernels such as PoCL's CPU device, and
   * {@code MPI_BUILD_OPENCL_ON_QUEUE} not false), or through the progress thread, and why. On the queue, a
   * collective or receive runs whole on the thread that runs the queue's commands, between the work queued
   * before and after it, and a send copies its data and starts there; the two ways mix freely across ranks and
   * messengers.
   *
   * @return for example "on the device's queue (native kernels through the FFM API)"
   */
  public String operationsRun() {
    return operationsRun;
  }

  /** An all-reduce through two pooled staging buffers: a read before, a gated write after. */
  private CompletableFuture<Void> stagedAllReduce(cl_mem buffer, long bytes, int count, Datatype type, ReduceOp op) {
    ByteBuffer send = staging(bytes);
    ByteBuffer receive = staging(bytes);
    return discardingOnFailure(() -> {
      StreamOrderedMessages.DeviceStep read = readOrFailure(buffer, bytes, send);
      if (read instanceof Refused) {
        return messages.allReduce(send, receive, count, type, op, read, NOTHING_QUEUED, NOTHING_QUEUED);
      }
      GatedWrite write;
      try {
        write = enqueueGatedWrite(buffer, bytes, receive);
      } catch (DeviceFailure e) {
        flush(); // the read is queued: it runs, and its event goes
        read.release();
        return messages.allReduce(send, receive, count, type, op, new Refused(e), NOTHING_QUEUED, NOTHING_QUEUED);
      }
      return messages.allReduce(send, receive, count, type, op, read, write.gate, write.written);
    }, send, receive);
  }

  /**
   * Enqueues through {@code staging} buffers of the engine's pool: if the enqueue or its hand-off to the engine
   * throws, they leave the pool (device work enqueued before the failure may still use them).
   */
  private CompletableFuture<Void> discardingOnFailure(Supplier<CompletableFuture<Void>> enqueue,
      ByteBuffer... staging) {
    try {
      return enqueue.get();
    } catch (RuntimeException e) {
      for (ByteBuffer b : staging) {
        messages.discard(b);
      }
      throw e;
    }
  }

  private record MappedRegion(ByteBuffer values, EventStep mapped, UserEventGate gate, EventStep unmapped) {}

  /**
   * Maps the first {@code bytes} of {@code buffer} behind the work already enqueued, and enqueues its unmap
   * behind a user event: the host may read and write the values between the map's completion and the gate's
   * opening, and the work enqueued afterwards sees what it wrote.
   */
  private MappedRegion enqueueGatedMap(cl_mem buffer, long bytes) {
    int[] err = new int[1];
    cl_event map = new cl_event();
    ByteBuffer values = clEnqueueMapBuffer(queue, buffer, false, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, null, map,
        err);
    check(err[0], "clEnqueueMapBuffer");
    cl_event gate = null;
    cl_event unmap = null;
    try {
      gate = clCreateUserEvent(context, err);
      check(err[0], "clCreateUserEvent");
      cl_event queued = new cl_event();
      check(clEnqueueUnmapMemObject(queue, buffer, values, 1, new cl_event[] {gate}, queued),
          "clEnqueueUnmapMemObject");
      unmap = queued;
      flush();
    } catch (DeviceFailure e) {
      if (unmap == null) {
        clEnqueueUnmapMemObject(queue, buffer, values, 0, null, null); // leaves nothing mapped
      } else {
        clReleaseEvent(unmap);
      }
      if (gate != null && err[0] == CL_SUCCESS) {
        clSetUserEventStatus(gate, CL_COMPLETE); // nothing waits for ever behind a gate nobody will open
        clReleaseEvent(gate);
      }
      clReleaseEvent(map);
      throw e;
    }
    return new MappedRegion(values.order(ByteOrder.nativeOrder()), new EventStep(map), new UserEventGate(gate, queue),
        new EventStep(unmap));
  }

  /**
   * The read of a collective's input, or, when the device refuses to enqueue it (a size past the buffer's
   * end, say), a step that fails at once: the collective then carries the failure to every rank.
   */
  private StreamOrderedMessages.DeviceStep readOrFailure(cl_mem buffer, long bytes, ByteBuffer into) {
    try {
      return enqueueRead(buffer, bytes, into);
    } catch (DeviceFailure e) {
      return new Refused(e);
    }
  }

  private EventStep enqueueRead(cl_mem buffer, long bytes, ByteBuffer into) {
    cl_event read = new cl_event();
    check(clEnqueueReadBuffer(queue, buffer, CL_FALSE, 0, bytes, Pointer.to(into), 0, null, read),
        "clEnqueueReadBuffer");
    return new EventStep(read);
  }

  private record GatedWrite(UserEventGate gate, EventStep written) {}

  private GatedWrite enqueueGatedWrite(cl_mem buffer, long bytes, ByteBuffer from) {
    int[] err = new int[1];
    cl_event gate = clCreateUserEvent(context, err);
    check(err[0], "clCreateUserEvent");
    cl_event write = new cl_event();
    try {
      check(clEnqueueWriteBuffer(queue, buffer, CL_FALSE, 0, bytes, Pointer.to(from), 1, new cl_event[] {gate},
          write), "clEnqueueWriteBuffer");
    } catch (RuntimeException e) {
      clSetUserEventStatus(gate, -1);
      clReleaseEvent(gate);
      throw e;
    }
    flush();
    return new GatedWrite(new UserEventGate(gate, queue), new EventStep(write));
  }

  /**
   * Returns how many of this messenger's collectives ran as persistent collectives. Where the communicator
   * offers them ({@link Communicator#persistentCollectives}; {@code mpi-build doctor} prints it), a broadcast
   * or all-reduce whose signature (size, type, reduction, root) was already used on the communicator prepares
   * one at its second use and starts it again at later uses; the first use, and every use where the
   * communicator has none, is a non-blocking collective. The decision depends only on what is the same on
   * every rank, so ranks never mix the two (see {@code StreamOrderedMessages}).
   *
   * @return the count, 0 where the communicator has no persistent collectives
   */
  public long persistentCollectivesUsed() {
    return messages.persistentStarts();
  }

  /** @return the number of messages not yet complete */
  public int inFlight() {
    return messages.inFlight();
  }

  /**
   * Stops the progress thread; messages still in flight fail, and queued work waiting for them errors out.
   * Idempotent.
   */
  @Override
  public void close() {
    close("it was closed");
  }

  private void close(String why) {
    if (guard.closeAsDependent(owner == null ? null : owner.guard(), dependent, why)) {
      messages.close();
      choice.release();
    }
  }

  /** A staging buffer from the engine's pool, reused once the operation it is given to has completed. */
  private ByteBuffer staging(long bytes) {
    return messages.staging(StreamOrderedMessages.messageBytes(bytes));
  }

  /** Submits what was just enqueued: one flush per call, after its last command. */
  /**
   * Submits what is queued. Never throws: a command is queued whatever the flush says (a later flush or the
   * queue's finish submits it), and a throw after a gated command was queued would leave its gate closed, or a
   * rank out of a collective that the others wait for.
   */
  private void flush() {
    clFlush(queue);
  }

  private static void check(int rc, String what) {
    if (rc != CL_SUCCESS) {
      throw new DeviceFailure(what + " failed: " + CL.stringFor_errorCode(rc), rc);
    }
  }

  /** An enqueued command, finished when its event is complete; a negative status is the device's error. */
  private static final class EventStep implements StreamOrderedMessages.DeviceStep {
    private final cl_event event;

    EventStep(cl_event event) {
      this.event = event;
    }

    @Override
    public boolean finished() {
      int[] status = new int[1];
      try {
        check(clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, Sizeof.cl_int, Pointer.to(status), null),
            "clGetEventInfo");
      } catch (CLException e) {
        throw new IllegalStateException("the command queue's event is no longer valid (queue released?): "
            + e.getMessage(), e);
      }
      if (status[0] < 0) {
        throw new DeviceFailure("the device command failed: " + CL.stringFor_errorCode(status[0]), status[0]);
      }
      return status[0] == CL_COMPLETE;
    }

    /** A driver callback that only unparks the progress thread; all the work stays on that thread. */
    @Override
    public boolean wakeWhenFinished(Runnable wake) {
      return clSetEventCallback(event, CL_COMPLETE, (e, status, data) -> wake.run(), null) == CL_SUCCESS;
    }

    @Override
    public void release() {
      clReleaseEvent(event);
    }
  }

  /** A user event that holds back the write behind it. */
  private static final class UserEventGate implements StreamOrderedMessages.Gate {
    private final cl_event event;
    private final cl_command_queue queue;
    private boolean set;

    UserEventGate(cl_event event, cl_command_queue queue) {
      this.event = event;
      this.queue = queue;
    }

    @Override
    public void open() {
      settle(CL_COMPLETE);
    }

    /**
     * Lets the write and the work behind it run rather than fail them: PoCL 3.1 aborts the process
     * ("PTHREAD ERROR in pocl_update_event_failed(): Invalid argument") when a user event with commands
     * waiting for it is set to an error status, and CUDA cannot fail a stream either. The future says the
     * operation failed; the engine has put back an all-reduce's own values into the staging buffer, so its
     * device buffer is unchanged; a receive's or broadcast receiver's is undefined.
     */
    @Override
    public void fail() {
      settle(CL_COMPLETE);
    }

    private void settle(int status) {
      if (!set) {
        set = true;
        check(clSetUserEventStatus(event, status), "clSetUserEventStatus");
        clReleaseEvent(event);
        clFlush(queue); // lets the driver schedule the commands that were waiting for the event now
      }
    }
  }
}
