package org.mpibuild.examples;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUdeviceptr;
import org.mpibuild.KernelSource;
import org.mpibuild.cuda.CudaKernel;

/** A CUDA saxpy kernel and a run of it that checks every element on the host. */
public final class CudaSaxpy {
  /** The CUDA source; extern "C" keeps the kernel's name unmangled. */
  public static final String SOURCE = String.join("\n",
      "extern \"C\" __global__ void saxpy(float a, const float* x, float* y, int n) {",
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;",
      "  if (i < n) y[i] = a * x[i] + y[i];",
      "}",
      "");

  /** The request every rank passes. */
  public static final KernelSource REQUEST = KernelSource.of(SOURCE).withKernels("saxpy").withOptions("-O3");

  private CudaSaxpy() {}

  /** Runs saxpy on the GPU with data that depends on {@code rank}; true if every element is right. */
  public static boolean runAndVerify(CudaKernel k, int rank, int n) {
    SaxpyData d = new SaxpyData(rank, n);
    float a = d.a;
    float[] x = d.x;
    float[] y = d.y;
    long bytes = (long) n * Sizeof.FLOAT;
    cuCtxSetCurrent(k.context());
    CUdeviceptr dx = new CUdeviceptr();
    CUdeviceptr dy = new CUdeviceptr();
    cuMemAlloc(dx, bytes);
    cuMemAlloc(dy, bytes);
    try {
      cuMemcpyHtoD(dx, Pointer.to(x), bytes);
      cuMemcpyHtoD(dy, Pointer.to(y), bytes);
      k.launch("saxpy", new int[] {(n + 255) / 256, 1, 1}, new int[] {256, 1, 1}, 0, null, a, dx, dy, n);
      cuCtxSynchronize();
      float[] out = new float[n];
      cuMemcpyDtoH(Pointer.to(out), dy, bytes);
      return d.matches(out);
    } finally {
      cuMemFree(dx);
      cuMemFree(dy);
    }
  }
}
