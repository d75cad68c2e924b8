package org.mpibuild.cuda;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadDataJIT;
import static jcuda.driver.JCudaDriver.cuModuleUnload;

import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import jcuda.Pointer;
import jcuda.driver.CUfunction;
import jcuda.driver.CUjit_option;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;
import jcuda.driver.JITOptions;
import org.mpibuild.spi.UseGuard;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads CUDA binaries into this rank's GPU through the driver API, from memory ({@code cuModuleLoadDataJIT},
 * with the JIT error log on failure), into its primary context. Before loading, a GPU that has no SASS in the
 * binary is warned about, naming its architecture and the PTX its driver JIT-compiles.
 */
final class ModuleLoader {
  private static final Logger log = LoggerFactory.getLogger(ModuleLoader.class);

  private final CudaDevice device;
  private final UseGuard owner;

  /**
   * @param device this rank's GPU
   * @param owner the guard of the backend, which closes the modules loaded here before the context is released
   */
  ModuleLoader(CudaDevice device, UseGuard owner) {
    this.device = device;
    this.owner = owner;
  }

  /**
   * Loads a binary and finds its kernels.
   *
   * @param bytes the binary, to read what it holds
   * @param binary the same binary, for the driver, which reads it where it lies
   * @param kernelNames the kernels to find
   * @return the loaded module
   * @throws IllegalStateException if the driver cannot load it, with its JIT log and what the binary holds
   * @throws IllegalArgumentException for a kernel name the module does not have
   */
  CudaKernel load(ByteBuffer bytes, Pointer binary, List<String> kernelNames) {
    CudaBinaryContents contents = contentsOrNull(bytes);
    CudaKernel.check(cuCtxSetCurrent(device.context()), "cuCtxSetCurrent");
    CUmodule module = loadModule(binary, contents);
    return new CudaKernel(device.context(), module, functions(module, kernelNames), owner);
  }

  /** What the binary holds, after warning if this GPU would JIT-compile it or cannot run it; null if unreadable. */
  private CudaBinaryContents contentsOrNull(ByteBuffer bytes) {
    try {
      CudaBinaryContents contents = CudaBinaryContents.read(bytes);
      String warning = loadWarning(contents, device.arch());
      if (warning != null) {
        log.warn(warning);
      }
      return contents;
    } catch (CudaBinaryFormatException e) {
      log.warn("cannot list what the CUDA binary holds ({}); loading it anyway", e.getMessage());
      return null;
    }
  }

  private CUmodule loadModule(Pointer binary, CudaBinaryContents contents) {
    CUmodule module = new CUmodule();
    JITOptions jit = new JITOptions();
    byte[] errors = new byte[16384];
    jit.putBytes(CUjit_option.CU_JIT_ERROR_LOG_BUFFER, errors);
    jit.putInt(CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, errors.length);
    int rc = cuModuleLoadDataJIT(module, binary, jit);
    if (rc != CUresult.CUDA_SUCCESS) {
      String jitLog = jit.getString(CUjit_option.CU_JIT_ERROR_LOG_BUFFER);
      throw new IllegalStateException("cuModuleLoadDataJIT failed: " + CUresult.stringFor(rc)
          + (jitLog == null || jitLog.isBlank() ? "" : ": " + jitLog.strip())
          + (contents == null ? "" : " (the binary is a " + contents.summary() + "; this GPU is " + device.arch()
          + ")"));
    }
    return module;
  }

  /** The module's kernels by name; unloads the module if one is missing. */
  private static Map<String, CUfunction> functions(CUmodule module, List<String> kernelNames) {
    Map<String, CUfunction> functions = new LinkedHashMap<>();
    for (String name : kernelNames) {
      CUfunction f = new CUfunction();
      int rc = cuModuleGetFunction(f, module, name);
      if (rc != CUresult.CUDA_SUCCESS) {
        cuModuleUnload(module);
        throw new IllegalArgumentException("unknown kernel name '" + name + "' (" + CUresult.stringFor(rc)
            + "): declare it extern \"C\" __global__ so that its name is not mangled");
      }
      functions.put(name, f);
    }
    return functions;
  }

  /**
   * What a rank of architecture {@code arch} should be told before loading {@code contents}: null when it
   * runs SASS; else a warning naming its architecture and the PTX it JIT-compiles, or saying that nothing in
   * the binary runs on it.
   */
  static String loadWarning(CudaBinaryContents contents, String arch) {
    CudaBinaryContents.LoadPlan plan = contents.plan(arch);
    switch (plan.how()) {
      case JIT_PTX:
        return "this GPU (" + arch + ") has no SASS in the binary (" + contents.summary() + "): the driver JIT-compiles"
            + " the PTX " + plan.code().ptxDescription() + " now; build for " + arch + " (MPI_BUILD_CUDA_ARCH, or unset"
            + " it to build for the job's GPUs) to load without compiling";
      case NONE:
        return "this GPU (" + arch + ") has neither SASS nor PTX it can JIT-compile in the binary ("
            + contents.summary() + "): the load will fail";
      default:
        return null;
    }
  }
}
