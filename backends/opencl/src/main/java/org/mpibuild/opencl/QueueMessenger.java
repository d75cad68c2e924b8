package org.mpibuild.opencl;

import static org.jocl.CL.CL_INVALID_OPERATION;
import static org.jocl.CL.CL_QUEUE_CONTEXT;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.clGetCommandQueueInfo;
import static org.mpibuild.streams.NothingQueued.NOTHING_QUEUED;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_mem;
import org.mpibuild.opencl.QueueSteps.GatedWrite;
import org.mpibuild.opencl.QueueSteps.MappedRegion;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;
import org.mpibuild.spi.UseGuard;
import org.mpibuild.streams.DeviceFailure;
import org.mpibuild.streams.DeviceMessenger;
import org.mpibuild.streams.DeviceStep;
import org.mpibuild.streams.Refused;
import org.mpibuild.streams.StreamOrderedMessages;

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
 * never hang, on MPI or device errors; {@link #close()} fails the sends and receives still in flight and releases
 * the device work waiting for them with an error, and lets the collectives left end alike on every rank (see
 * {@link StreamOrderedMessages#close}). Join the futures of the operations in flight before a blocking call
 * on the queue (a blocking read, {@code clFinish}): where they run on the progress thread, PoCL 3.1 may never run
 * the work behind a gate the progress thread opens while another thread waits in such a call.
 *
 * <p><b>After close.</b> A messenger on the queue of an {@link org.mpibuild.MpiBuild} ({@link OpenClKernel#queue()})
 * is closed by it, before the queue is released. Once the messenger or its MpiBuild is closed,
 * {@link #sendAfter} and {@link #receiveBefore} throw {@code IllegalStateException} naming the messenger and
 * why ("messenger on queue ...: its MpiBuild was closed") and enqueue nothing; a close on another thread
 * waits for the enqueue in progress. A messenger on a queue the program made itself must be closed before
 * that queue is released.
 *
 * <p>The four calls are synchronized: two threads enqueueing on one messenger hand the engine their operations
 * in the queue's order. The life cycle (open, close, the uses that a close waits for) is {@link DeviceMessenger}'s;
 * the device commands are {@code QueueSteps}' (through the progress thread) and {@code OnQueueOperations}' (on
 * the queue itself).
 */
public final class QueueMessenger extends DeviceMessenger {
  /** The commands of operations that go through the progress thread. */
  private final QueueSteps steps;
  /** Runs operations on the queue itself; null where they go through the progress thread ({@link #operationsRun}). */
  private final OnQueueOperations onQueue;
  private final QueueCommands.Choice choice;

  private QueueMessenger(Communicator comm, cl_command_queue queue, cl_context context, Duration deadline,
      UseGuard owner) {
    super(comm, "messenger on queue " + queue, queue.toString(), deadline, CL::stringFor_errorCode, owner);
    this.choice = QueueCommands.forQueue(queue);
    this.onQueue = choice.commands() == null ? null : new OnQueueOperations(queue, choice.commands());
    this.steps = new QueueSteps(queue, context);
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
    OpenClBackend backend = OpenClBackend.owning(queue);
    UseGuard owner = backend == null ? null : backend.guard();
    return openUnder(owner, () -> new QueueMessenger(comm, queue, contextOf(queue), deadline, owner));
  }

  /** The context of {@code queue}, asked inside a use of its owner (if any), which keeps the queue valid. */
  private static cl_context contextOf(cl_command_queue queue) {
    cl_context context = new cl_context();
    int rc = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, Sizeof.cl_context, Pointer.to(context), null);
    if (rc != CL_SUCCESS) {
      throw new IllegalArgumentException("not a usable command queue: " + CL.stringFor_errorCode(rc));
    }
    return context;
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
    try (UseGuard.Use ignored = use()) {
      if (onQueue != null) {
        int n = StreamOrderedMessages.messageBytes(bytes);
        return onQueue.enqueue(messages().sendOnQueue(n, dest, tag), buffer, n);
      }
      ByteBuffer staging = staging(bytes);
      return discardingOnFailure(() -> {
        DeviceStep read = steps.read(buffer, bytes, staging);
        steps.flush();
        return messages().send(staging, dest, tag, read);
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
    try (UseGuard.Use ignored = use()) {
      if (onQueue != null) {
        int n = StreamOrderedMessages.messageBytes(bytes);
        return onQueue.enqueue(messages().receiveOnQueue(n, source, tag), buffer, n);
      }
      ByteBuffer staging = staging(bytes);
      return discardingOnFailure(() -> {
        GatedWrite write = steps.gatedWrite(buffer, bytes, staging);
        return messages().receive(staging, source, tag, write.gate(), write.written());
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
    try (UseGuard.Use ignored = use()) {
      int n = broadcastBytes(bytes, root);
      if (onQueue != null) {
        return onQueue.enqueue(messages().broadcastOnQueue(n, root), buffer, n);
      }
      ByteBuffer staging = messages().staging(StreamOrderedMessages.BROADCAST_HEADER + n);
      ByteBuffer data = staging.slice(StreamOrderedMessages.BROADCAST_HEADER, n);
      return discardingOnFailure(() -> {
        if (comm().rank() == root) {
          DeviceStep read = steps.readOrRefusal(buffer, bytes, data);
          steps.flush();
          return messages().broadcast(staging, root, read, null, null);
        }
        GatedWrite write;
        try {
          write = steps.gatedWrite(buffer, bytes, data);
        } catch (DeviceFailure e) {
          return messages().broadcastRefused(n, root, e);
        }
        return messages().broadcast(staging, root, null, write.gate(), write.written());
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
    try (UseGuard.Use ignored = use()) {
      int bytes = allReduceBytes(count, type);
      if (onQueue != null) {
        return onQueue.enqueue(messages().allReduceOnQueue(count, type, op), buffer, bytes);
      }
      MappedRegion region;
      try {
        region = steps.gatedMap(buffer, bytes);
      } catch (DeviceFailure e) {
        if (e.code() == CL_INVALID_OPERATION) {
          // a driver that refuses a second mapping for writing of a region whose unmap is still queued (the
          // OpenCL specification allows it to): this call stages through host buffers instead
          return stagedAllReduce(buffer, bytes, count, type, op);
        }
        return messages().allReduceRefused(count, type, op, e);
      }
      // in place on the mapped values: nothing allocated or copied on this thread (the progress thread copies
      // them for MPI at the collective's turn); a device that shares host memory (PoCL's CPU device) maps a
      // buffer where it lies
      return messages().allReduce(region.values(), region.values(), count, type, op, region.mapped(),
          region.gate(), region.unmapped());
    }
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
    return choice.why();
  }

  /** An all-reduce through two pooled staging buffers: a read before, a gated write after. */
  private CompletableFuture<Void> stagedAllReduce(cl_mem buffer, long bytes, int count, Datatype type, ReduceOp op) {
    ByteBuffer send = staging(bytes);
    ByteBuffer receive = staging(bytes);
    return discardingOnFailure(() -> {
      DeviceStep read = steps.readOrRefusal(buffer, bytes, send);
      if (read instanceof Refused) {
        return messages().allReduce(send, receive, count, type, op, read, NOTHING_QUEUED, NOTHING_QUEUED);
      }
      GatedWrite write;
      try {
        write = steps.gatedWrite(buffer, bytes, receive);
      } catch (DeviceFailure e) {
        steps.flush(); // the read is queued: it runs, and its event goes
        read.release();
        return messages().allReduce(send, receive, count, type, op, new Refused(e), NOTHING_QUEUED, NOTHING_QUEUED);
      }
      return messages().allReduce(send, receive, count, type, op, read, write.gate(), write.written());
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
        messages().discard(b);
      }
      throw e;
    }
  }

  /** A staging buffer from the engine's pool, reused once the operation it is given to has completed. */
  private ByteBuffer staging(long bytes) {
    return messages().staging(StreamOrderedMessages.messageBytes(bytes));
  }

  /** Gives back the device thread that running operations on the queue holds, if it does. */
  @Override
  protected void closeDevice() {
    choice.release();
    steps.close();
  }
}
