package org.mpibuild.cuda;

import static jcuda.driver.CUresult.CUDA_ERROR_NOT_READY;
import static jcuda.driver.CUresult.CUDA_SUCCESS;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventQuery;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuStreamWaitValue32;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstreamWaitValue_flags;
import jcuda.driver.JCudaDriver;
import org.mpibuild.cuda.PinnedPool.Pinned;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;
import org.mpibuild.spi.UseGuard;
import org.mpibuild.streams.DeviceFailure;
import org.mpibuild.streams.DeviceMessenger;
import org.mpibuild.streams.DeviceStep;
import org.mpibuild.streams.Gate;
import org.mpibuild.streams.Refused;
import org.mpibuild.streams.StreamOrderedMessages;

/**
 * MPI messages ordered with a CUDA stream, with no host synchronization in between; the CUDA half of
 * what {@code org.mpibuild.opencl.QueueMessenger} does for OpenCL, on the same progress engine.
 *
 * <p>{@link #sendAfter} enqueues an asynchronous copy of the device buffer into pinned host memory and
 * records an event behind it; the progress thread polls the event ({@code cuEventQuery}) and then starts
 * the MPI send. {@link #receiveBefore} enqueues {@code cuStreamWaitValue32} on a flag in host-mapped
 * memory, then the copy from pinned memory to the device; the progress thread receives the message, then
 * writes the flag, and the stream goes on. No CUDA call runs inside a driver callback.
 *
 * <p><b>Pinned memory is reused, never freed while the messenger is open.</b> Freeing pinned memory
 * ({@code cuMemFreeHost}) waits for the whole device, and a stream may be waiting, at a receive's
 * {@code cuStreamWaitValue32}, for the progress thread that would be freeing: on an H200 that froze the first
 * ring of messages for good. So each operation takes its staging memory and flag from a pool of the messenger's
 * (blocks of a power-of-two size, {@code blockBytes}) and gives them back once it has completed; an operation
 * whose size has no idle block allocates one ({@code cuMemHostAlloc}). The pool has no cap: it holds, per block
 * size, the most blocks its operations had in flight at once. A failed operation's memory, which MPI or a copy
 * may still use, is never reused and never freed by the messenger. After the close, a daemon thread frees the
 * idle blocks, so that the close never waits for the device: the caller's own context must outlive that thread.
 * On the context of an {@link org.mpibuild.MpiBuild} (the device's primary context), no thread frees them: they
 * go with the context when its last holder releases it, so a program that opens and closes messengers there
 * again and again keeps each one's blocks until then. MPI must provide {@code MPI_THREAD_MULTIPLE}.
 *
 * <p><b>After close.</b> A messenger on the context of an {@link org.mpibuild.MpiBuild}
 * ({@link CudaKernel#context()}) is closed by it, before the context is released. Once the messenger or its
 * MpiBuild is closed, {@link #sendAfter} and {@link #receiveBefore} throw {@code IllegalStateException}
 * naming the messenger and why ("messenger on stream ...: its MpiBuild was closed") and make no CUDA call; a
 * close on another thread waits for the enqueue in progress.
 *
 * <p>The four calls are synchronized: two threads enqueueing on one messenger hand the engine their operations
 * in the stream's order. The life cycle (open, close, the uses that a close waits for) is
 * {@link DeviceMessenger}'s, as for OpenCL's messenger.
 */
public final class StreamMessenger extends DeviceMessenger {
  private final CUcontext context;
  private final CUstream stream;
  /** The pinned host memory of this messenger's operations, reused (see the class comment). */
  private final PinnedPool pinned;

  private StreamMessenger(Communicator comm, CUcontext context, CUstream stream, Duration deadline, UseGuard owner) {
    super(comm, "messenger on stream " + stream, "cuda " + stream, deadline, CUresult::stringFor, owner);
    this.context = context;
    this.stream = stream;
    this.pinned = new PinnedPool(context, String.valueOf(stream));
  }

  /**
   * Binds a helper to a communicator and a stream of {@code context} (for example
   * {@link CudaKernel#context()}).
   *
   * @throws IllegalStateException if MPI does not provide MPI_THREAD_MULTIPLE
   */
  public static StreamMessenger open(Communicator comm, CUcontext context, CUstream stream) {
    return open(comm, context, stream, StreamOrderedMessages.DEFAULT_DEADLINE);
  }

  /**
   * As {@link #open(Communicator, CUcontext, CUstream)}, with the deadline of collectives: how long one waits,
   * once this rank has started it, for every rank to start it before rank 0 names the absent ranks and
   * aborts the job ({@link Duration#ZERO}: for ever).
   *
   * @throws IllegalStateException if MPI does not provide MPI_THREAD_MULTIPLE
   */
  public static StreamMessenger open(Communicator comm, CUcontext context, CUstream stream, Duration deadline) {
    CudaBackend backend = CudaBackend.owning(context);
    UseGuard owner = backend == null ? null : backend.guard();
    return openUnder(owner, () -> new StreamMessenger(comm, context, stream, deadline, owner));
  }

  /**
   * Sends the first {@code bytes} of {@code buffer} to {@code dest} once the work already on the stream
   * has finished. Returns at once; the future completes when the message is sent.
   *
   * @throws IllegalStateException if the messenger or its MpiBuild is closed
   */
  public synchronized CompletableFuture<Void> sendAfter(CUdeviceptr buffer, long bytes, int dest, int tag) {
    try (UseGuard.Use ignored = use()) {
      return enqueueSend(buffer, bytes, dest, tag);
    }
  }

  private CompletableFuture<Void> enqueueSend(CUdeviceptr buffer, long bytes, int dest, int tag) {
    current();
    // on a failure, staging stays out of the pool: a copy enqueued before it may still write there
    Pinned staging = pinned.take(bytes, 0);
    check(cuMemcpyDtoHAsync(staging.host, buffer, bytes, stream), "cuMemcpyDtoHAsync");
    CUevent copied = record();
    return messages().send(staging.buffer, dest, tag, new EventStep(copied, staging, null));
  }

  /**
   * Receives {@code bytes} bytes from {@code source} into the start of {@code buffer}, so that work
   * enqueued on the stream after this call sees them. Returns at once; the future completes when the data
   * is on the device.
   *
   * @throws IllegalStateException if the messenger or its MpiBuild is closed
   */
  public synchronized CompletableFuture<Void> receiveBefore(CUdeviceptr buffer, long bytes, int source, int tag) {
    try (UseGuard.Use ignored = use()) {
      return enqueueReceive(buffer, bytes, source, tag);
    }
  }

  private CompletableFuture<Void> enqueueReceive(CUdeviceptr buffer, long bytes, int source, int tag) {
    current();
    Pinned staging = pinned.take(bytes, 0);
    Pinned flag = pinned.take(4, JCudaDriver.CU_MEMHOSTALLOC_DEVICEMAP);
    try {
      DeviceStep written = gatedCopy(buffer, staging.host, bytes, staging, flag);
      return messages().receive(staging.buffer, source, tag, new FlagGate(flag), written);
    } catch (RuntimeException | Error e) {
      openAfterFailure(flag);
      throw e; // both stay out of the pool: a copy enqueued before the failure may still use them
    }
  }

  /**
   * Broadcasts the first {@code bytes} of {@code buffer} from {@code root}, in place, ordered with the stream
   * as {@code QueueMessenger#bcastAfter} is with an OpenCL queue: the root's bytes are taken once the work
   * already on its stream has finished; elsewhere, work enqueued after this call sees them. Every rank calls
   * it, in the same order as its other collectives on the communicator. Returns at once.
   *
   * @return completes on the root when the broadcast is done, elsewhere when the bytes are on the device;
   *     fails on every rank, with the same message, if the root's copy failed or the driver refused to enqueue
   *     it; a receiver whose copy was refused fails alone (it still takes part, so that no rank waits for it)
   * @throws IllegalStateException if the messenger or its MpiBuild is closed
   */
  public synchronized CompletableFuture<Void> bcastAfter(CUdeviceptr buffer, long bytes, int root) {
    try (UseGuard.Use ignored = use()) {
      int n = broadcastBytes(bytes, root);
      int total = StreamOrderedMessages.BROADCAST_HEADER + n;
      // on a failure, the blocks stay out of the pool: a copy enqueued before it may still use them
      Pinned flag = null;
      try {
        current();
        Pinned staging = pinned.take(total, 0);
        Pointer data = staging.host.withByteOffset(StreamOrderedMessages.BROADCAST_HEADER);
        if (comm().rank() == root) {
          check(cuMemcpyDtoHAsync(data, buffer, bytes, stream), "cuMemcpyDtoHAsync");
          return messages().broadcast(staging.buffer, root, new EventStep(record(), staging, null), null, null);
        }
        flag = pinned.take(4, JCudaDriver.CU_MEMHOSTALLOC_DEVICEMAP);
        DeviceStep written = gatedCopy(buffer, data, bytes, staging, flag);
        return messages().broadcast(staging.buffer, root, null, new FlagGate(flag), written);
      } catch (DeviceFailure e) {
        openAfterFailure(flag);
        return messages().broadcastRefused(n, root, e);
      } catch (RuntimeException | Error e) {
        openAfterFailure(flag);
        throw e;
      }
    }
  }

  /**
   * Reduces the first {@code count} values of {@code type} in {@code buffer} over every rank, in place,
   * ordered with the stream as {@code QueueMessenger#allreduceAfter} is with an OpenCL queue. Returns at once.
   *
   * @return completes when the results are on the device; fails on every rank with the same message naming
   *     the failing rank if one rank's copy failed, or the driver refused to enqueue its copies or its stream
   *     wait (that rank still takes part, so that no rank waits for it)
   * @throws IllegalStateException if the messenger or its MpiBuild is closed
   */
  public synchronized CompletableFuture<Void> allreduceAfter(CUdeviceptr buffer, int count, Datatype type,
      ReduceOp op) {
    try (UseGuard.Use ignored = use()) {
      int bytes = allReduceBytes(count, type);
      // on a failure, the blocks stay out of the pool: a copy enqueued before it may still use them
      Pinned flag = null;
      CUevent read = null;
      try {
        current();
        Pinned send = pinned.take(bytes, 0);
        Pinned receive = pinned.take(bytes, 0);
        flag = pinned.take(4, JCudaDriver.CU_MEMHOSTALLOC_DEVICEMAP);
        check(cuMemcpyDtoHAsync(send.host, buffer, bytes, stream), "cuMemcpyDtoHAsync");
        read = record();
        DeviceStep written = gatedCopy(buffer, receive.host, bytes, receive, flag);
        return messages().allReduce(send.buffer, receive.buffer, count, type, op, new EventStep(read, send, null),
            new FlagGate(flag), written);
      } catch (DeviceFailure e) {
        openAfterFailure(flag);
        if (read != null) {
          cuEventDestroy(read); // its resources go once the copy before it has run
        }
        return messages().allReduceRefused(count, type, op, e);
      } catch (RuntimeException | Error e) {
        openAfterFailure(flag);
        throw e;
      }
    }
  }

  /** A wait enqueued before a failure, on {@code flag} (or null), lets the stream go on. */
  private static void openAfterFailure(Pinned flag) {
    if (flag != null) {
      flag.buffer.putInt(0, 1);
    }
  }

  /**
   * Waits on the stream for {@code flag}, then copies {@code from} (in {@code block}) to the device; returns the
   * step after the copy. Throws if the wait or the copy is refused (the wait may be queued: the caller opens the
   * flag). Once the copy is queued, a refused event after it comes back as a {@link Refused} step: the operation
   * then goes on as usual and fails alone at its end, since a gate opened early would copy the block's old bytes.
   */
  private DeviceStep gatedCopy(CUdeviceptr buffer, Pointer from, long bytes, Pinned block,
      Pinned flag) {
    check(cuStreamWaitValue32(stream, flag.device, 1, CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ),
        "cuStreamWaitValue32 (stream memory operations must be supported by the driver)");
    check(cuMemcpyHtoDAsync(buffer, from, bytes, stream), "cuMemcpyHtoDAsync");
    try {
      return new EventStep(record(), block, flag);
    } catch (DeviceFailure e) {
      return new Refused(e);
    }
  }

  /** Frees the idle pinned blocks (see the class comment); failed operations released the stream past their waits. */
  @Override
  protected void closeDevice() {
    pinned.freeAfterClose(owned());
  }

  private void current() {
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  }

  private CUevent record() {
    CUevent e = new CUevent();
    check(cuEventCreate(e, CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    int rc = cuEventRecord(e, stream);
    if (rc != CUDA_SUCCESS) {
      cuEventDestroy(e);
      check(rc, "cuEventRecord");
    }
    return e;
  }

  private static void check(int rc, String what) {
    DeviceFailure.check(rc, what, CUresult::stringFor);
  }

  /**
   * The stream's progress up to an event; gives its pinned memory back to the pool once its operation has
   * completed.
   */
  private final class EventStep implements DeviceStep {
    private final CUevent event;
    private final Pinned staging;
    private final Pinned flag;
    private boolean done;

    EventStep(CUevent event, Pinned staging, Pinned flag) {
      this.event = event;
      this.staging = staging;
      this.flag = flag;
    }

    @Override
    public boolean finished() {
      current();
      int rc = cuEventQuery(event);
      if (rc == CUDA_ERROR_NOT_READY) {
        return false;
      }
      check(rc, "the stream's work (cuEventQuery)");
      done = true;
      return true;
    }

    /** The operation failed: MPI or a copy may still use its memory, which never goes back to the pool. */
    @Override
    public void release() {
      cuCtxSetCurrent(context); // cleanup never throws: the engine completes or fails the future after it
      cuEventDestroy(event);
    }

    @Override
    public void releaseCompleted() {
      cuCtxSetCurrent(context);
      cuEventDestroy(event);
      if (done) { // else never asked: the copies behind it may not have finished, and the memory stays out
        pinned.give(staging);
        if (flag != null) {
          pinned.give(flag);
        }
      }
    }
  }

  /** A flag in host-mapped memory that {@code cuStreamWaitValue32} waits for. */
  private static final class FlagGate implements Gate {
    private final Pinned flag;

    FlagGate(Pinned flag) {
      this.flag = flag;
    }

    @Override
    public void open() {
      flag.buffer.putInt(0, 1);
    }

    @Override
    public void fail() {
      // A stream cannot be failed from the host: release it past the wait so nothing hangs. The data it
      // copies is not a message, and the future says the receive failed.
      flag.buffer.putInt(0, 1);
    }
  }
}
