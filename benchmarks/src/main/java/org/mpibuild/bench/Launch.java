package org.mpibuild.bench;

import static org.jocl.CL.CL_MEM_COPY_HOST_PTR;
import static org.jocl.CL.CL_MEM_READ_WRITE;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clEnqueueNDRangeKernel;
import static org.jocl.CL.clFinish;
import static org.jocl.CL.clReleaseMemObject;
import static org.jocl.CL.clSetKernelArg;

import java.util.Map;
import java.util.function.Function;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.mpibuild.LaunchShape;
import org.mpibuild.opencl.OpenClKernel;
import org.mpibuild.spi.LoadedProgram;

/**
 * Launches every kernel of a benchmark program once, at the shapes {@link Programs#shapes} gives, and waits
 * for it to finish. With PoCL, a kernel's first launch at a local size that its binary does not carry
 * generates the work-group function for that size on the launching rank; a binary built with the shapes
 * named (mpi-build's request, the finished-code limit) carries them, so that launch generates nothing.
 * "Ready" includes the first launch either way.
 */
final class Launch {
  /** The matrix order of the launch: one work-group of the largest tile. */
  static final int N = 16;

  private Launch() {}

  /** Launches every kernel of {@code program} (a {@link Programs} name) and waits until all have finished. */
  static void everyKernel(LoadedProgram loaded, String program) {
    OpenClKernel k = (OpenClKernel) loaded;
    everyKernel(k.context(), k.queue(), k::kernel, program, N);
  }

  /** The same on a context and queue of the caller's, with its kernels by name. */
  static void everyKernel(Ocl cl, Map<String, cl_kernel> kernels, String program) {
    everyKernel(cl.context, cl.queue, kernels::get, program, N);
  }

  /** Launches every kernel once at matrix order {@code n} and waits until all have finished. */
  static void everyKernel(cl_context context, cl_command_queue queue, Function<String, cl_kernel> kernels,
      String program, int n) {
    try (Buffers b = new Buffers(context, n)) {
      for (LaunchShape s : Programs.shapes(program, n)) {
        enqueue(queue, kernels.apply(s.kernel()), s, b, n);
      }
      check(clFinish(queue), "clFinish");
    }
  }

  /** Three n x n float matrices (A, B filled, C), released on close. */
  static final class Buffers implements AutoCloseable {
    final cl_mem a;
    final cl_mem b;
    final cl_mem c;

    Buffers(cl_context context, int n) {
      int[] err = new int[1];
      float[] init = new float[n * n];
      for (int i = 0; i < init.length; i++) {
        init[i] = (i % 7) - 3;
      }
      long bytes = (long) Sizeof.cl_float * n * n;
      a = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, Pointer.to(init), err);
      b = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, Pointer.to(init), err);
      c = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, null, err);
      check(err[0], "clCreateBuffer");
    }

    @Override
    public void close() {
      clReleaseMemObject(a);
      clReleaseMemObject(b);
      clReleaseMemObject(c);
    }
  }

  /** Enqueues one launch of {@code kernel} at shape {@code s} on the matrices of order {@code n}. */
  static void enqueue(cl_command_queue queue, cl_kernel kernel, LaunchShape s, Buffers b, int n) {
    if (s.kernel().equals("saxpy")) {
      clSetKernelArg(kernel, 0, Sizeof.cl_float, Pointer.to(new float[] {2f}));
      clSetKernelArg(kernel, 1, Sizeof.cl_mem, Pointer.to(b.a));
      clSetKernelArg(kernel, 2, Sizeof.cl_mem, Pointer.to(b.b));
      clSetKernelArg(kernel, 3, Sizeof.cl_int, Pointer.to(new int[] {n * n}));
    } else {
      clSetKernelArg(kernel, 0, Sizeof.cl_int, Pointer.to(new int[] {n}));
      clSetKernelArg(kernel, 1, Sizeof.cl_float, Pointer.to(new float[] {1f}));
      clSetKernelArg(kernel, 2, Sizeof.cl_float, Pointer.to(new float[] {0f}));
      clSetKernelArg(kernel, 3, Sizeof.cl_mem, Pointer.to(b.a));
      clSetKernelArg(kernel, 4, Sizeof.cl_mem, Pointer.to(b.b));
      clSetKernelArg(kernel, 5, Sizeof.cl_mem, Pointer.to(b.c));
    }
    long[] global = s.globalSize();
    int rc = clEnqueueNDRangeKernel(queue, kernel, global.length, null, global, s.localSize(), 0, null, null);
    check(rc, "launch of " + s.kernel());
  }

  static void check(int rc, String what) {
    if (rc != CL_SUCCESS) {
      throw new IllegalStateException(what + ": " + CL.stringFor_errorCode(rc));
    }
  }
}
