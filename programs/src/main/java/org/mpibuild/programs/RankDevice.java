package org.mpibuild.programs;

import static jcuda.driver.JCudaDriver.cuCtxCreate;
import static jcuda.driver.JCudaDriver.cuCtxGetDevice;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGetAttribute;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadDataJIT;
import static org.mpibuild.programs.CudaStreams.KERNELS;
import static org.mpibuild.programs.CudaStreams.check;

import java.util.HashMap;
import java.util.Map;
import jcuda.Pointer;
import jcuda.driver.CUcomputemode;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUfunction;
import jcuda.driver.CUjit_option;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.JITOptions;
import org.mpibuild.cuda.CudaKernel;

/** Where a rank of {@link CudaStreams} runs its work: its context, and the kernels loaded into it. */
interface RankDevice {
  CUcontext context();

  /** As {@link CudaKernel#launch}. */
  void launch(String name, int[] grid, int[] block, int sharedMemBytes, CUstream stream, Object... args);

  /** The device's primary context, every rank's: the kernels that MpiBuild loaded. */
  record Shared(CudaKernel kernel) implements RankDevice {
    @Override
    public CUcontext context() {
      return kernel.context();
    }

    @Override
    public void launch(String name, int[] grid, int[] block, int sharedMemBytes, CUstream stream, Object... args) {
      kernel.launch(name, grid, block, sharedMemBytes, stream, args);
    }
  }

  /**
   * A context of the rank's own on the kernel's GPU, created on the rank's thread, with the kernels' binary loaded
   * and every kernel looked up at once, before the first message (a kernel loaded at its first launch may wait for
   * the whole context). Never destroyed: a messenger's thread may still free pinned memory in it after its close,
   * and the process ends right after the check.
   */
  final class Own implements RankDevice {
    private final CUcontext context = new CUcontext();
    private final Map<String, CUfunction> functions = new HashMap<>();

    /** Made current on the calling thread. */
    Own(CudaKernel kernel, byte[] image) {
      check(cuCtxSetCurrent(kernel.context()), "cuCtxSetCurrent");
      CUdevice device = new CUdevice();
      check(cuCtxGetDevice(device), "cuCtxGetDevice");
      int[] mode = new int[1];
      check(cuDeviceGetAttribute(mode, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, device),
          "cuDeviceGetAttribute(COMPUTE_MODE)");
      if (mode[0] != CUcomputemode.CU_COMPUTEMODE_DEFAULT) {
        throw new IllegalStateException("the GPU's compute mode is " + CUcomputemode.stringFor(mode[0])
            + ", which allows no second context in this process: run CudaStreams with 'shared'");
      }
      check(cuCtxCreate(context, 0, device), "cuCtxCreate");
      CUmodule module = new CUmodule();
      byte[] terminated = java.util.Arrays.copyOf(image, image.length + 1); // a PTX image must end with a NUL
      JITOptions jit = new JITOptions();
      byte[] errors = new byte[16384];
      jit.putBytes(CUjit_option.CU_JIT_ERROR_LOG_BUFFER, errors);
      jit.putInt(CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, errors.length);
      int rc = cuModuleLoadDataJIT(module, Pointer.to(terminated), jit);
      if (rc != CUresult.CUDA_SUCCESS) {
        String log = jit.getString(CUjit_option.CU_JIT_ERROR_LOG_BUFFER);
        throw new IllegalStateException("cuModuleLoadDataJIT failed: " + CUresult.stringFor(rc)
            + (log == null || log.isBlank() ? "" : ": " + log.strip()));
      }
      for (String name : KERNELS) {
        CUfunction f = new CUfunction();
        check(cuModuleGetFunction(f, module, name), "cuModuleGetFunction(" + name + ")");
        functions.put(name, f);
      }
    }

    @Override
    public CUcontext context() {
      return context;
    }

    @Override
    public void launch(String name, int[] grid, int[] block, int sharedMemBytes, CUstream stream, Object... args) {
      check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
      CudaKernel.launchFunction(functions.get(name), name, grid, block, sharedMemBytes, stream, args);
    }
  }
}
