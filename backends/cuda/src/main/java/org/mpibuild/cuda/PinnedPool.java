package org.mpibuild.cuda;

import static jcuda.driver.CUresult.CUDA_SUCCESS;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemHostAlloc;
import static jcuda.driver.JCudaDriver.cuMemHostGetDevicePointer;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;
import org.mpibuild.streams.DeviceFailure;
import org.mpibuild.streams.StreamOrderedMessages;

/**
 * A {@link StreamMessenger}'s pinned memory (see its class comment). A block goes back once its operation has
 * completed; a failed operation's block is never reused nor freed, since MPI or a copy may still use it. After the
 * close, the idle blocks are freed on a daemon thread where the messenger's context is the caller's own; a context
 * of an {@link org.mpibuild.MpiBuild}'s, which it releases right after, keeps them until its last holder releases
 * it (a daemon's free could race that release).
 */
final class PinnedPool {
  /** Pinned host memory, seen as a direct buffer: {@link #buffer} is the part the current operation uses. */
  static final class Pinned {
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

  private final CUcontext context;
  private final String name;
  private final List<Pinned> idle = new ArrayList<>();
  private boolean closed;

  /** A pool for a messenger on {@code context}; {@code name} names the thread that frees it after the close. */
  PinnedPool(CUcontext context, String name) {
    this.context = context;
    this.name = name;
  }

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
    DeviceFailure.check(cuMemHostAlloc(host, capacity, flags), "cuMemHostAlloc of " + capacity + " bytes",
        CUresult::stringFor);
    CUdeviceptr device = null;
    if ((flags & JCudaDriver.CU_MEMHOSTALLOC_DEVICEMAP) != 0) {
      device = new CUdeviceptr();
      // a block that cannot be mapped is left to go with the context, not freed here: cuMemFreeHost waits for
      // the device, which may be waiting at a gate
      DeviceFailure.check(cuMemHostGetDevicePointer(device, host, 0), "cuMemHostGetDevicePointer",
          CUresult::stringFor);
    }
    return new Pinned(host, device, capacity, flags).use(bytes);
  }

  /** Gives back a block whose operation has completed: nothing uses it any more. */
  synchronized void give(Pinned p) {
    if (!closed) {
      idle.add(p);
    }
  }

  /**
   * Frees the idle blocks (see the class comment): a free waits for the whole device, which the close must not.
   *
   * @param contextOwned whether the context is an MpiBuild's, which keeps the blocks until its last holder
   *     releases it
   */
  void freeAfterClose(boolean contextOwned) {
    List<Pinned> blocks;
    synchronized (this) {
      closed = true;
      blocks = new ArrayList<>(idle);
      idle.clear();
    }
    if (blocks.isEmpty() || contextOwned) {
      return;
    }
    Thread t = new Thread(() -> {
      if (cuCtxSetCurrent(context) != CUDA_SUCCESS) {
        return; // the context has gone, and its memory with it
      }
      for (Pinned p : blocks) {
        cuMemFreeHost(p.host);
      }
    }, "mpi-build-cuda-free " + name);
    t.setDaemon(true);
    t.start();
  }
}
