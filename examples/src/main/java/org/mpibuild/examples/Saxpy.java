package org.mpibuild.examples;

import static org.jocl.CL.CL_MEM_COPY_HOST_PTR;
import static org.jocl.CL.CL_MEM_READ_ONLY;
import static org.jocl.CL.CL_MEM_READ_WRITE;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.CL_TRUE;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clEnqueueNDRangeKernel;
import static org.jocl.CL.clEnqueueReadBuffer;
import static org.jocl.CL.clReleaseMemObject;
import static org.jocl.CL.clSetKernelArg;

import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.mpibuild.KernelSource;
import org.mpibuild.opencl.OpenClKernel;

/** A saxpy kernel (y = a * x + y) and a run of it that checks every element on the host. */
public final class Saxpy {
  /** The OpenCL source. */
  public static final String SOURCE = String.join("\n",
      "__kernel void saxpy(const float a, __global const float* x, __global float* y, const int n) {",
      "  int i = get_global_id(0);",
      "  if (i < n) y[i] = a * x[i] + y[i];",
      "}",
      "");

  /** The request every rank passes. */
  public static final KernelSource REQUEST = KernelSource.of(SOURCE).withKernels("saxpy")
      .withOptions("-cl-std=CL1.2");

  private Saxpy() {}

  /**
   * Runs saxpy on data that depends on {@code rank} and checks the result on the host.
   *
   * @return true if every element is right
   */
  public static boolean runAndVerify(OpenClKernel k, int rank, int n) {
    SaxpyData d = new SaxpyData(rank, n);
    float a = d.a;
    float[] x = d.x;
    float[] y = d.y;
    long bytes = (long) Sizeof.cl_float * n;
    int[] err = new int[1];
    cl_mem mx = clCreateBuffer(k.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, Pointer.to(x), err);
    cl_mem my = clCreateBuffer(k.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, Pointer.to(y), err);
    try {
      cl_kernel saxpy = k.kernel("saxpy");
      clSetKernelArg(saxpy, 0, Sizeof.cl_float, Pointer.to(new float[] {a}));
      clSetKernelArg(saxpy, 1, Sizeof.cl_mem, Pointer.to(mx));
      clSetKernelArg(saxpy, 2, Sizeof.cl_mem, Pointer.to(my));
      clSetKernelArg(saxpy, 3, Sizeof.cl_int, Pointer.to(new int[] {n}));
      int rc = clEnqueueNDRangeKernel(k.queue(), saxpy, 1, null, new long[] {n}, null, 0, null, null);
      if (rc != CL_SUCCESS) {
        throw new IllegalStateException("clEnqueueNDRangeKernel: " + CL.stringFor_errorCode(rc));
      }
      float[] out = new float[n];
      rc = clEnqueueReadBuffer(k.queue(), my, CL_TRUE, 0, bytes, Pointer.to(out), 0, null, null);
      if (rc != CL_SUCCESS) {
        throw new IllegalStateException("clEnqueueReadBuffer: " + CL.stringFor_errorCode(rc));
      }
      return d.matches(out);
    } finally {
      clReleaseMemObject(mx);
      clReleaseMemObject(my);
    }
  }
}
