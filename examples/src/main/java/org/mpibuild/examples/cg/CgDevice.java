package org.mpibuild.examples.cg;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/**
 * What the solver needs of a device, and all that differs between OpenCL ({@link OpenClCg}) and CUDA
 * ({@link CudaCg}): buffers, copies and kernel launches enqueued in order on one queue (a CUDA stream), blocking
 * reads and writes, and a stream-ordered messenger on that queue. Which kernels run, with which buffers, in which
 * order, is the solver's ({@link CgSolver}), written once.
 *
 * @param <B> a device buffer ({@code cl_mem}, {@code CUdeviceptr})
 */
interface CgDevice<B> extends AutoCloseable {
  /** @return the backend's id, as {@code --backend} names it */
  String backend();

  /**
   * Allocates a buffer and enqueues its filling with zeros.
   *
   * @param bytes its size
   * @return the buffer, to be given back with {@link #free}
   */
  B zeros(long bytes);

  /** Frees a buffer of {@link #zeros}; the queue must have finished with it. */
  void free(B buffer);

  /** Enqueues a copy of {@code bytes} bytes from {@code from + fromOffset} to {@code to + toOffset}. */
  void copy(B from, long fromOffset, B to, long toOffset, long bytes);

  /**
   * Enqueues the kernel {@code name} over {@code items[0] × items[1]} work-items (CUDA threads) in work-groups
   * (thread blocks) of {@code group[0] × group[1]}, rounded up to whole work-groups.
   *
   * @param name a kernel of {@link CgKernels#KERNELS}
   * @param items the work-items in each dimension, 1 or 2 values
   * @param group the work-group in each dimension, as many values
   * @param args the kernel's arguments: buffers and {@code Integer}s
   */
  void launch(String name, int[] items, int[] group, Object... args);

  /** Reads {@code bytes} bytes at {@code from + offset} into {@code to}'s start, once the queue has got there. */
  void read(B from, long offset, ByteBuffer to, long bytes);

  /** Writes {@code from}'s first {@code bytes} bytes to {@code to}'s start, in queue order, and waits for it. */
  void write(B to, ByteBuffer from, long bytes);

  /** Waits until the queue has run everything enqueued. */
  void finish();

  /** @return a stream-ordered messenger on this device's queue, for {@link OrderedExchange} */
  Messenger<B> messenger(Communicator comm);

  /** Releases what the device part holds of its own (not the buffers of {@link #zeros}, nor the kernels). */
  @Override
  void close();

  /**
   * The stream-ordered calls of the backend's messenger ({@code QueueMessenger}, {@code StreamMessenger}): each
   * enqueued on the device's queue, returning at once.
   *
   * @param <B> a device buffer
   */
  interface Messenger<B> extends AutoCloseable {
    /** Sends once the work enqueued before has finished. */
    CompletableFuture<Void> sendAfter(B buffer, long bytes, int dest, int tag);

    /** Receives so that the work enqueued after sees the bytes. */
    CompletableFuture<Void> receiveBefore(B buffer, long bytes, int source, int tag);

    /** Reduces over every rank, in place, in queue order. */
    CompletableFuture<Void> allreduceAfter(B buffer, int count, Datatype type, ReduceOp op);

    /** @return where the messenger runs its operations, in words */
    String operationsRun();

    @Override
    void close();
  }
}
