package org.mpibuild.examples.cg;

import static org.jocl.CL.CL_MEM_READ_WRITE;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.CL_TRUE;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clEnqueueCopyBuffer;
import static org.jocl.CL.clEnqueueFillBuffer;
import static org.jocl.CL.clEnqueueNDRangeKernel;
import static org.jocl.CL.clEnqueueReadBuffer;
import static org.jocl.CL.clEnqueueWriteBuffer;
import static org.jocl.CL.clFinish;
import static org.jocl.CL.clReleaseMemObject;
import static org.jocl.CL.clSetKernelArg;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.mpibuild.opencl.OpenClKernel;
import org.mpibuild.opencl.QueueMessenger;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/**
 * The solver's device on OpenCL: buffers ({@code cl_mem}), copies and launches on the kernels' in-order queue,
 * and {@link QueueMessenger} on that queue for the ordered mode.
 */
final class OpenClCg implements CgDevice<cl_mem> {
  private final OpenClKernel k;
  private final cl_command_queue queue;

  /** @param k the built kernels ({@link CgKernels#request}) and their queue */
  OpenClCg(OpenClKernel k) {
    this.k = k;
    this.queue = k.queue();
  }

  @Override
  public String backend() {
    return "opencl";
  }

  @Override
  public cl_mem zeros(long bytes) {
    int[] err = new int[1];
    cl_mem m = clCreateBuffer(k.context(), CL_MEM_READ_WRITE, bytes, null, err);
    check(err[0]);
    check(clEnqueueFillBuffer(queue, m, Pointer.to(new double[] {0}), Sizeof.cl_double, 0, bytes, 0, null, null));
    return m;
  }

  @Override
  public void free(cl_mem buffer) {
    clReleaseMemObject(buffer);
  }

  @Override
  public void copy(cl_mem from, long fromOffset, cl_mem to, long toOffset, long bytes) {
    check(clEnqueueCopyBuffer(queue, from, to, fromOffset, toOffset, bytes, 0, null, null));
  }

  /** Sets the arguments of {@code name} (buffers and ints) and enqueues it on whole work-groups. */
  @Override
  public void launch(String name, int[] items, int[] group, Object... args) {
    cl_kernel kernel = k.kernel(name);
    for (int i = 0; i < args.length; i++) {
      if (args[i] instanceof cl_mem m) {
        check(clSetKernelArg(kernel, i, Sizeof.cl_mem, Pointer.to(m)));
      } else {
        check(clSetKernelArg(kernel, i, Sizeof.cl_int, Pointer.to(new int[] {(Integer) args[i]})));
      }
    }
    long[] global = global(items, group);
    long[] local = new long[group.length];
    for (int d = 0; d < group.length; d++) {
      local[d] = group[d];
    }
    check(clEnqueueNDRangeKernel(queue, kernel, global.length, null, global, local, 0, null, null));
  }

  /** @return the global work size: {@code items} rounded up to whole work-groups of {@code group} */
  static long[] global(int[] items, int[] group) {
    long[] global = new long[items.length];
    for (int d = 0; d < items.length; d++) {
      global[d] = (long) CgKernels.groups(items[d], group[d]) * group[d];
    }
    return global;
  }

  @Override
  public void read(cl_mem from, long offset, ByteBuffer to, long bytes) {
    check(clEnqueueReadBuffer(queue, from, CL_TRUE, offset, bytes, Pointer.to(to), 0, null, null));
  }

  @Override
  public void write(cl_mem to, ByteBuffer from, long bytes) {
    check(clEnqueueWriteBuffer(queue, to, CL_TRUE, 0, bytes, Pointer.to(from), 0, null, null));
  }

  @Override
  public void finish() {
    check(clFinish(queue));
  }

  @Override
  public Messenger<cl_mem> messenger(Communicator comm) {
    QueueMessenger m = QueueMessenger.open(comm, queue);
    return new Messenger<>() {
      @Override
      public CompletableFuture<Void> sendAfter(cl_mem buffer, long bytes, int dest, int tag) {
        return m.sendAfter(buffer, bytes, dest, tag);
      }

      @Override
      public CompletableFuture<Void> receiveBefore(cl_mem buffer, long bytes, int source, int tag) {
        return m.receiveBefore(buffer, bytes, source, tag);
      }

      @Override
      public CompletableFuture<Void> allreduceAfter(cl_mem buffer, int count, Datatype type, ReduceOp op) {
        return m.allreduceAfter(buffer, count, type, op);
      }

      @Override
      public String operationsRun() {
        return m.operationsRun();
      }

      @Override
      public void close() {
        m.close();
      }
    };
  }

  /** Nothing of its own: the queue is the kernel's. */
  @Override
  public void close() {
    // the kernel's MpiBuild releases the queue
  }

  /** Throws, naming the error, unless {@code rc} is {@code CL_SUCCESS}. */
  static void check(int rc) {
    if (rc != CL_SUCCESS) {
      throw new IllegalStateException(CL.stringFor_errorCode(rc));
    }
  }
}
