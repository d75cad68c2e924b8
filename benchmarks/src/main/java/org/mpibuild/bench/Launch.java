package org.mpibuild.bench;

import static org.jocl.CL.CL_MEM_READ_WRITE;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clEnqueueNDRangeKernel;
import static org.jocl.CL.clFinish;
import static org.jocl.CL.clReleaseMemObject;
import static org.jocl.CL.clSetKernelArg;

import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.mpibuild.opencl.OpenClKernel;
import org.mpibuild.spi.LoadedProgram;

/**
 * Launches every kernel of a benchmark program once, on a small problem, and waits for it to finish. With
 * PoCL, a kernel's first launch compiles a version for its work-group size, on every rank, whatever built
 * the binary: no strategy can share that work, so "ready" includes it.
 */
final class Launch {
  /** The matrix order of the launch: one work-group of the largest tile. */
  static final int N = 16;

  private Launch() {}

  /** Launches every kernel of {@code program} (a {@link Programs} name) and waits until all have finished. */
  static void everyKernel(LoadedProgram loaded, String program) {
    OpenClKernel k = (OpenClKernel) loaded;
    int[] err = new int[1];
    long bytes = (long) Sizeof.cl_float * N * N;
    cl_mem a = clCreateBuffer(k.context(), CL_MEM_READ_WRITE, bytes, null, err);
    cl_mem b = clCreateBuffer(k.context(), CL_MEM_READ_WRITE, bytes, null, err);
    cl_mem c = clCreateBuffer(k.context(), CL_MEM_READ_WRITE, bytes, null, err);
    try {
      for (String name : k.kernelNames()) {
        cl_kernel kernel = k.kernel(name);
        long[] global;
        long[] local;
        if (program.equals("saxpy")) {
          clSetKernelArg(kernel, 0, Sizeof.cl_float, Pointer.to(new float[] {2f}));
          clSetKernelArg(kernel, 1, Sizeof.cl_mem, Pointer.to(a));
          clSetKernelArg(kernel, 2, Sizeof.cl_mem, Pointer.to(b));
          clSetKernelArg(kernel, 3, Sizeof.cl_int, Pointer.to(new int[] {N * N}));
          global = new long[] {N * N};
          local = null;
        } else {
          int tile = Programs.tile(Integer.parseInt(name.substring("mm_".length())));
          clSetKernelArg(kernel, 0, Sizeof.cl_int, Pointer.to(new int[] {N}));
          clSetKernelArg(kernel, 1, Sizeof.cl_float, Pointer.to(new float[] {1f}));
          clSetKernelArg(kernel, 2, Sizeof.cl_float, Pointer.to(new float[] {0f}));
          clSetKernelArg(kernel, 3, Sizeof.cl_mem, Pointer.to(a));
          clSetKernelArg(kernel, 4, Sizeof.cl_mem, Pointer.to(b));
          clSetKernelArg(kernel, 5, Sizeof.cl_mem, Pointer.to(c));
          global = new long[] {N, N};
          local = new long[] {tile, tile};
        }
        int rc = clEnqueueNDRangeKernel(k.queue(), kernel, global.length, null, global, local, 0, null, null);
        if (rc != CL_SUCCESS) {
          throw new IllegalStateException("launch of " + name + ": " + CL.stringFor_errorCode(rc));
        }
      }
      int rc = clFinish(k.queue());
      if (rc != CL_SUCCESS) {
        throw new IllegalStateException("clFinish: " + CL.stringFor_errorCode(rc));
      }
    } finally {
      clReleaseMemObject(a);
      clReleaseMemObject(b);
      clReleaseMemObject(c);
    }
  }
}
