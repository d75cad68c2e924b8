package org.mpibuild.opencl;

import static org.jocl.CL.CL_INVALID_VALUE;
import static org.jocl.CL.CL_MEM_ASSOCIATED_MEMOBJECT;
import static org.jocl.CL.CL_MEM_OFFSET;
import static org.jocl.CL.CL_MEM_SIZE;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.clFlush;
import static org.jocl.CL.clGetMemObjectInfo;

import java.util.concurrent.CompletableFuture;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_mem;
import org.mpibuild.streams.DeviceFailure;
import org.mpibuild.streams.DeviceStep;
import org.mpibuild.streams.QueuedOperation;

/**
 * The operations of a {@link QueueMessenger} that its queue runs itself: each enqueued as a native kernel
 * ({@link QueueCommands}) on the device buffer's memory, which starts when the work before it has finished, the
 * work after it starting when it returns. A buffer smaller than the operation, or a command the device refuses,
 * fails it (a collective on every rank).
 */
final class OnQueueOperations {
  private final cl_command_queue queue;
  private final QueueCommands commands;
  /** The shape of the buffer last asked about: a loop passes the same one every time. */
  private BufferShape lastShape;

  OnQueueOperations(cl_command_queue queue, QueueCommands commands) {
    this.queue = queue;
    this.commands = commands;
  }

  /** A buffer's size, its parent and offset in it if it is a sub-buffer, and the error of asking, if any. */
  private record BufferShape(cl_mem buffer, long bytes, cl_mem parent, long offset, int error) {}

  /**
   * Enqueues {@code operation} on the first {@code bytes} of {@code buffer}.
   *
   * @return the operation's future
   */
  CompletableFuture<Void> enqueue(QueuedOperation operation, cl_mem buffer, int bytes) {
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
    operation.enqueued(new QueueCommandStep(new QueueSteps.EventStep(command.event()), commands, command.id()));
    clFlush(queue); // the command is queued whatever the flush says: the operation goes on
    return operation.future();
  }

  /**
   * The native kernel of an operation on the queue: its event, and, once the engine releases it (the operation
   * ended, whichever way), what the kernel would have run is dropped too, for a kernel that never ran.
   */
  private record QueueCommandStep(QueueSteps.EventStep event, QueueCommands commands, long id)
      implements DeviceStep {
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
}
