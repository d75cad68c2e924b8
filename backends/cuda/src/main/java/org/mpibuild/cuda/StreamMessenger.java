package org.mpibuild.cuda;

import static jcuda.driver.CUresult.CUDA_ERROR_NOT_READY;
import static jcuda.driver.CUresult.CUDA_SUCCESS;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventQuery;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemHostAlloc;
import static jcuda.driver.JCudaDriver.cuMemHostGetDevicePointer;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuStreamWaitValue32;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;
import org.mpibuild.spi.UseGuard;
import org.mpibuild.streams.DeviceFailure;
import org.mpibuild.streams.StreamOrderedMessages;
import org.mpibuild.streams.StreamOrderedMessages.Refused;

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
 * in the stream's order.
 */
public final class StreamMessenger implements AutoCloseable {
  private final CUcontext context;
  private final CUstream stream;
  private final Communicator comm;
  private final StreamOrderedMessages messages;
  private final UseGuard guard;
  /** The backend whose context this is, which closes the messenger before it releases the context; or null. */
  private final CudaBackend owner;
  private final UseGuard.Dependent dependent = this::close;
  /** The pinned host memory of this messenger's operations, reused (see the class comment). */
  private final PinnedPool pinned = new PinnedPool();

  private StreamMessenger(CUcontext context, CUstream stream, Communicator comm, StreamOrderedMessages messages,
      CudaBackend owner) {
    this.context = context;
    this.stream = stream;
    this.comm = comm;
    this.messages = messages;
    this.guard = new UseGuard("messenger on stream " + stream);
    this.owner = owner;
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
    CudaBackend owner = CudaBackend.owning(context);
    // inside a use of the owner: its close waits until the messenger is registered, then closes it
    try (UseGuard.Use ignored = owner == null ? null : owner.guard().enter()) {
      StreamMessenger m = new StreamMessenger(context, stream, comm,
          new StreamOrderedMessages(comm, "cuda " + stream, deadline, CUresult::stringFor), owner);
      if (owner != null) {
        owner.guard().adopt(m.dependent);
      }
      return m;
    }
  }

  /**
   * Sends the first {@code bytes} of {@code buffer} to {@code dest} once the work already on the stream
   * has finished. Returns at once; the future completes when the message is sent.
   *
   * @throws IllegalStateException if the messenger or its MpiBuild is closed
   */
  public synchronized CompletableFuture<Void> sendAfter(CUdeviceptr buffer, long bytes, int dest, int tag) {
    try (UseGuard.Use ignored = guard.enter()) {
      return enqueueSend(buffer, bytes, dest, tag);
    }
  }

  private CompletableFuture<Void> enqueueSend(CUdeviceptr buffer, long bytes, int dest, int tag) {
    current();
    // on a failure, staging stays out of the pool: a copy enqueued before it may still write there
    Pinned staging = pinned.take(bytes, 0);
    check(cuMemcpyDtoHAsync(staging.host, buffer, bytes, stream), "cuMemcpyDtoHAsync");
    CUevent copied = record();
    return messages.send(staging.buffer, dest, tag, new EventStep(copied, staging, null));
  }

  /**
   * Receives {@code bytes} bytes from {@code source} into the start of {@code buffer}, so that work
   * enqueued on the stream after this call sees them. Returns at once; the future completes when the data
   * is on the device.
   *
   * @throws IllegalStateException if the messenger or its MpiBuild is closed
   */
  public synchronized CompletableFuture<Void> receiveBefore(CUdeviceptr buffer, long bytes, int source, int tag) {
    try (UseGuard.Use ignored = guard.enter()) {
      return enqueueReceive(buffer, bytes, source, tag);
    }
  }

  private CompletableFuture<Void> enqueueReceive(CUdeviceptr buffer, long bytes, int source, int tag) {
    current();
    Pinned staging = pinned.take(bytes, 0);
    Pinned flag = pinned.take(4, JCudaDriver.CU_MEMHOSTALLOC_DEVICEMAP);
    try {
      StreamOrderedMessages.DeviceStep written = gatedCopy(buffer, staging.host, bytes, staging, flag);
      return messages.receive(staging.buffer, source, tag, new FlagGate(flag), written);
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
    try (UseGuard.Use ignored = guard.enter()) {
      messages.checkRoot(root);
      int n = StreamOrderedMessages.messageBytes(bytes);
      if (n > Integer.MAX_VALUE - StreamOrderedMessages.BROADCAST_HEADER) {
        throw new IllegalArgumentException("a broadcast of " + bytes + " bytes is too large for one staging buffer");
      }
      int total = StreamOrderedMessages.BROADCAST_HEADER + n;
      // on a failure, the blocks stay out of the pool: a copy enqueued before it may still use them
      Pinned flag = null;
      try {
        current();
        Pinned staging = pinned.take(total, 0);
        Pointer data = staging.host.withByteOffset(StreamOrderedMessages.BROADCAST_HEADER);
        if (comm.rank() == root) {
          check(cuMemcpyDtoHAsync(data, buffer, bytes, stream), "cuMemcpyDtoHAsync");
          return messages.broadcast(staging.buffer, root, new EventStep(record(), staging, null), null, null);
        }
        flag = pinned.take(4, JCudaDriver.CU_MEMHOSTALLOC_DEVICEMAP);
        StreamOrderedMessages.DeviceStep written = gatedCopy(buffer, data, bytes, staging, flag);
        return messages.broadcast(staging.buffer, root, null, new FlagGate(flag), written);
      } catch (DeviceFailure e) {
        openAfterFailure(flag);
        return messages.broadcastRefused(n, root, e);
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
  public synchronized CompletableFuture<Void> allreduceAfter(CUdeviceptr buffer, int count, Datatype type, ReduceOp op) {
    try (UseGuard.Use ignored = guard.enter()) {
      if (count <= 0) {
        throw new IllegalArgumentException("count " + count + " must be 1 or more");
      }
      long bytes = (long) count * type.bytes();
      int n = StreamOrderedMessages.messageBytes(bytes);
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
        StreamOrderedMessages.DeviceStep written = gatedCopy(buffer, receive.host, bytes, receive, flag);
        return messages.allReduce(send.buffer, receive.buffer, count, type, op, new EventStep(read, send, null),
            new FlagGate(flag), written);
      } catch (DeviceFailure e) {
        openAfterFailure(flag);
        if (read != null) {
          cuEventDestroy(read); // its resources go once the copy before it has run
        }
        return messages.allReduceRefused(count, type, op, e);
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
  private StreamOrderedMessages.DeviceStep gatedCopy(CUdeviceptr buffer, Pointer from, long bytes, Pinned block,
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

  /**
   * Stops the progress thread; messages still in flight fail, and the stream is released past their waits.
   * Idempotent.
   */
  @Override
  public void close() {
    close("it was closed");
  }

  private void close(String why) {
    if (guard.closeAsDependent(owner == null ? null : owner.guard(), dependent, why)) {
      messages.close();
      pinned.freeAfterClose();
    }
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
    if (rc != CUDA_SUCCESS) {
      throw new DeviceFailure(what + " failed: " + CUresult.stringFor(rc), rc);
    }
  }

  /** Pinned host memory, seen as a direct buffer: {@link #buffer} is the part the current operation uses. */
  private static final class Pinned {
    final Pointer host;
    /** The block's address on the device where it is host-mapped (a flag's), asked once; else null. */
    final CUdeviceptr device;
    final long capacity;
    final int flags;
    private final ByteBuffer whole;
    ByteBuffer buffer;

    private Pinned(Pointer host, CUdeviceptr device, long capacity, int flags) {
      this.host = host;
      this.device = device;
      this.capacity = capacity;
      this.flags = flags;
      this.whole = host.getByteBuffer(0, capacity).order(ByteOrder.nativeOrder());
    }

    /** Lends the first {@code bytes} to an operation; a flag (host-mapped) starts at 0, not yet written. */
    Pinned use(long bytes) {
      whole.putInt(0, 0); // through the whole block: a message may be shorter than an int
      buffer = whole.duplicate().clear().limit((int) bytes).slice().order(ByteOrder.nativeOrder());
      return this;
    }
  }

  /**
   * The bytes of the pinned block that holds {@code bytes}: a power of two, at least 64, so that blocks are
   * reused across sizes that differ a little; {@code bytes} itself where that would reach 2 GiB (more than one
   * buffer can view).
   */
  static long blockBytes(long bytes) {
    long rounded = Math.max(64, Long.highestOneBit(Math.max(1, bytes - 1)) << 1);
    return rounded <= Integer.MAX_VALUE ? rounded : bytes;
  }

  /**
   * The messenger's pinned memory (see the class comment). A block goes back once its operation has completed;
   * a failed operation's block is never reused nor freed, since MPI or a copy may still use it. After the close,
   * the idle blocks are freed on a daemon thread where the messenger's context is the caller's own; a context of
   * an {@link org.mpibuild.MpiBuild}'s, which it releases right after, keeps them until its last holder releases it
   * (a daemon's free could race that release).
   */
  private final class PinnedPool {
    private final java.util.List<Pinned> idle = new java.util.ArrayList<>();
    private boolean closed;

    /** A block of at least {@code bytes} ({@link StreamOrderedMessages#messageBytes} checks the size first). */
    Pinned take(long bytes, int flags) {
      StreamOrderedMessages.messageBytes(bytes);
      long capacity = blockBytes(bytes);
      synchronized (this) {
        for (int i = 0; i < idle.size(); i++) {
          Pinned p = idle.get(i);
          if (p.flags == flags && p.capacity == capacity) {
            idle.remove(i);
            return p.use(bytes);
          }
        }
      }
      // outside the lock: the progress thread gives blocks back (and opens gates) meanwhile
      Pointer host = new Pointer();
      check(cuMemHostAlloc(host, capacity, flags), "cuMemHostAlloc of " + capacity + " bytes");
      CUdeviceptr device = null;
      if ((flags & JCudaDriver.CU_MEMHOSTALLOC_DEVICEMAP) != 0) {
        device = new CUdeviceptr();
        // a block that cannot be mapped is left to go with the context, not freed here: cuMemFreeHost waits for
        // the device, which may be waiting at a gate
        check(cuMemHostGetDevicePointer(device, host, 0), "cuMemHostGetDevicePointer");
      }
      return new Pinned(host, device, capacity, flags).use(bytes);
    }

    /** Gives back a block whose operation has completed: nothing uses it any more. */
    synchronized void give(Pinned p) {
      if (!closed) {
        idle.add(p);
      }
    }

    /** Frees the idle blocks (see the class comment): a free waits for the whole device, which the close must not. */
    void freeAfterClose() {
      java.util.List<Pinned> blocks;
      synchronized (this) {
        closed = true;
        blocks = new java.util.ArrayList<>(idle);
        idle.clear();
      }
      if (blocks.isEmpty() || owner != null) {
        return;
      }
      Thread t = new Thread(() -> {
        if (cuCtxSetCurrent(context) != CUDA_SUCCESS) {
          return; // the context has gone, and its memory with it
        }
        for (Pinned p : blocks) {
          cuMemFreeHost(p.host);
        }
      }, "mpi-build-cuda-free " + stream);
      t.setDaemon(true);
      t.start();
    }
  }

  /**
   * The stream's progress up to an event; gives its pinned memory back to the pool once its operation has
   * completed.
   */
  private final class EventStep implements StreamOrderedMessages.DeviceStep {
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
  private static final class FlagGate implements StreamOrderedMessages.Gate {
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
