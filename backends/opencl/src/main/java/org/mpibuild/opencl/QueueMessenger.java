package org.mpibuild.opencl;

import static org.jocl.CL.CL_COMPLETE;
import static org.jocl.CL.CL_EVENT_COMMAND_EXECUTION_STATUS;
import static org.jocl.CL.CL_FALSE;
import static org.jocl.CL.CL_QUEUE_CONTEXT;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.clCreateUserEvent;
import static org.jocl.CL.clEnqueueReadBuffer;
import static org.jocl.CL.clEnqueueWriteBuffer;
import static org.jocl.CL.clFlush;
import static org.jocl.CL.clGetCommandQueueInfo;
import static org.jocl.CL.clGetEventInfo;
import static org.jocl.CL.clReleaseEvent;
import static org.jocl.CL.clSetUserEventStatus;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import org.jocl.CL;
import org.jocl.CLException;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_event;
import org.jocl.cl_mem;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.UseGuard;
import org.mpibuild.support.StreamOrderedMessages;

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
 * <p>{@link #sendAfter} enqueues a non-blocking read of the buffer into a direct staging buffer behind the
 * work already on the queue; a progress thread waits for that read (by polling its event, never in a
 * callback) and then starts the MPI send. {@link #receiveBefore} enqueues a non-blocking write from a
 * staging buffer, held back by a user event; the progress thread receives the message, then completes the
 * user event, and the write and everything queued after it run. Both return at once.
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
 */
public final class QueueMessenger implements AutoCloseable {
  private final cl_command_queue queue;
  private final cl_context context;
  private final StreamOrderedMessages messages;
  private final UseGuard guard;
  /** The backend whose queue this is, which closes the messenger before it releases the queue; or null. */
  private final OpenClBackend owner;
  private final UseGuard.Dependent dependent = this::close;

  private QueueMessenger(cl_command_queue queue, cl_context context, StreamOrderedMessages messages,
      OpenClBackend owner) {
    this.queue = queue;
    this.context = context;
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
    OpenClBackend owner = OpenClBackend.owning(queue);
    // inside a use of the owner: its close waits until the messenger is registered, then closes it
    try (UseGuard.Use ignored = owner == null ? null : owner.guard().enter()) {
      cl_context[] context = {new cl_context()};
      int rc = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, Sizeof.cl_context, Pointer.to(context[0]), null);
      if (rc != CL_SUCCESS) {
        throw new IllegalArgumentException("not a usable command queue: " + CL.stringFor_errorCode(rc));
      }
      QueueMessenger m = new QueueMessenger(queue, context[0], new StreamOrderedMessages(comm, queue.toString()), owner);
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
  public CompletableFuture<Void> sendAfter(cl_mem buffer, long bytes, int dest, int tag) {
    try (UseGuard.Use ignored = guard.enter()) {
      ByteBuffer staging = staging(bytes);
      cl_event read = new cl_event();
      check(clEnqueueReadBuffer(queue, buffer, CL_FALSE, 0, bytes, Pointer.to(staging), 0, null, read),
          "clEnqueueReadBuffer");
      check(clFlush(queue), "clFlush");
      return messages.send(staging, dest, tag, new EventStep(read));
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
  public CompletableFuture<Void> receiveBefore(cl_mem buffer, long bytes, int source, int tag) {
    try (UseGuard.Use ignored = guard.enter()) {
      return enqueueReceive(buffer, bytes, source, tag);
    }
  }

  private CompletableFuture<Void> enqueueReceive(cl_mem buffer, long bytes, int source, int tag) {
    ByteBuffer staging = staging(bytes);
    int[] err = new int[1];
    cl_event gate = clCreateUserEvent(context, err);
    check(err[0], "clCreateUserEvent");
    cl_event write = new cl_event();
    try {
      check(clEnqueueWriteBuffer(queue, buffer, CL_FALSE, 0, bytes, Pointer.to(staging), 1, new cl_event[] {gate},
          write), "clEnqueueWriteBuffer");
    } catch (RuntimeException e) {
      clReleaseEvent(gate);
      throw e;
    }
    check(clFlush(queue), "clFlush");
    return messages.receive(staging, source, tag, new UserEventGate(gate, queue), new EventStep(write));
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
    }
  }

  private static ByteBuffer staging(long bytes) {
    return ByteBuffer.allocateDirect(StreamOrderedMessages.messageBytes(bytes));
  }

  private static void check(int rc, String what) {
    if (rc != CL_SUCCESS) {
      throw new IllegalStateException(what + " failed: " + CL.stringFor_errorCode(rc));
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
        throw new IllegalStateException("the device command failed: " + CL.stringFor_errorCode(status[0]));
      }
      return status[0] == CL_COMPLETE;
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

    @Override
    public void fail() {
      settle(-1); // a negative status ends the commands waiting for the event with an error
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
