package org.mpibuild.examples.cg;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemsetD8Async;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import org.mpibuild.cuda.CudaKernel;
import org.mpibuild.cuda.StreamMessenger;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/**
 * The solver's device on CUDA: buffers ({@code CUdeviceptr}) in the kernels' context (the device's primary
 * context, one per process), copies and launches on one stream of its own, and {@link StreamMessenger} on that
 * stream for the ordered mode. The stream does not synchronize with the legacy default stream, so nothing but
 * this solver's own work orders it. Reads and writes are asynchronous copies on the stream, then a wait for it.
 */
final class CudaCg implements CgDevice<CUdeviceptr> {
  /** The operations' place, as {@code QueueMessenger#operationsRun} says it for OpenCL. */
  static final String OPERATIONS_RUN = "through the progress thread (events polled, stream waits on host flags)";

  private final CudaKernel k;
  private final CUstream stream = new CUstream();

  /**
   * Creates the stream, in the kernels' context, which becomes current on the calling thread.
   *
   * @param k the built kernels ({@link CgKernels#cudaRequest})
   */
  CudaCg(CudaKernel k) {
    this.k = k;
    check(cuCtxSetCurrent(k.context()), "cuCtxSetCurrent");
    check(cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }

  @Override
  public String backend() {
    return "cuda";
  }

  @Override
  public CUdeviceptr zeros(long bytes) {
    check(cuCtxSetCurrent(k.context()), "cuCtxSetCurrent");
    CUdeviceptr m = new CUdeviceptr();
    check(cuMemAlloc(m, bytes), "cuMemAlloc");
    check(cuMemsetD8Async(m, (byte) 0, bytes, stream), "cuMemsetD8Async");
    return m;
  }

  @Override
  public void free(CUdeviceptr buffer) {
    check(cuMemFree(buffer), "cuMemFree");
  }

  @Override
  public void copy(CUdeviceptr from, long fromOffset, CUdeviceptr to, long toOffset, long bytes) {
    check(cuMemcpyDtoDAsync(to.withByteOffset(toOffset), from.withByteOffset(fromOffset), bytes, stream),
        "cuMemcpyDtoDAsync");
  }

  /** Launches {@code name} on the stream: a grid of whole thread blocks of {@code group} over {@code items}. */
  @Override
  public void launch(String name, int[] items, int[] group, Object... args) {
    k.launch(name, grid(items, group), block(group), 0, stream, args);
  }

  /** @return the grid, 3 values: the thread blocks of {@code group} that cover {@code items}, 1 beyond them */
  static int[] grid(int[] items, int[] group) {
    int[] grid = {1, 1, 1};
    for (int d = 0; d < items.length; d++) {
      grid[d] = CgKernels.groups(items[d], group[d]);
    }
    return grid;
  }

  /** @return the thread block, 3 values: {@code group}, then 1 */
  static int[] block(int[] group) {
    int[] block = {1, 1, 1};
    System.arraycopy(group, 0, block, 0, group.length);
    return block;
  }

  @Override
  public void read(CUdeviceptr from, long offset, ByteBuffer to, long bytes) {
    check(cuMemcpyDtoHAsync(Pointer.to(to), from.withByteOffset(offset), bytes, stream), "cuMemcpyDtoHAsync");
    finish();
  }

  @Override
  public void write(CUdeviceptr to, ByteBuffer from, long bytes) {
    check(cuMemcpyHtoDAsync(to, Pointer.to(from), bytes, stream), "cuMemcpyHtoDAsync");
    finish();
  }

  @Override
  public void finish() {
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  }

  @Override
  public Messenger<CUdeviceptr> messenger(Communicator comm) {
    StreamMessenger m = StreamMessenger.open(comm, k.context(), stream);
    return new Messenger<>() {
      @Override
      public CompletableFuture<Void> sendAfter(CUdeviceptr buffer, long bytes, int dest, int tag) {
        return m.sendAfter(buffer, bytes, dest, tag);
      }

      @Override
      public CompletableFuture<Void> receiveBefore(CUdeviceptr buffer, long bytes, int source, int tag) {
        return m.receiveBefore(buffer, bytes, source, tag);
      }

      @Override
      public CompletableFuture<Void> allreduceAfter(CUdeviceptr buffer, int count, Datatype type, ReduceOp op) {
        return m.allreduceAfter(buffer, count, type, op);
      }

      @Override
      public String operationsRun() {
        return OPERATIONS_RUN;
      }

      @Override
      public void close() {
        m.close();
      }
    };
  }

  /** Waits for the stream, then destroys it. */
  @Override
  public void close() {
    check(cuCtxSetCurrent(k.context()), "cuCtxSetCurrent");
    finish();
    check(cuStreamDestroy(stream), "cuStreamDestroy");
  }

  private static void check(int rc, String what) {
    if (rc != CUresult.CUDA_SUCCESS) {
      throw new IllegalStateException(what + " failed: " + CUresult.stringFor(rc));
    }
  }
}
