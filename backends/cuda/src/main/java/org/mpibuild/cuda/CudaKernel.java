package org.mpibuild.cuda;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuModuleUnload;

import java.util.List;
import java.util.Map;
import jcuda.NativePointerObject;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import org.mpibuild.spi.LoadedProgram;
import org.mpibuild.spi.NamedKernels;
import org.mpibuild.spi.UseGuard;

/**
 * The CUDA view of a {@link org.mpibuild.Kernel}: a module loaded through the driver API and its
 * functions. Reach it with {@code kernel.as(CudaKernel.class)}.
 *
 * <pre>{@code
 * CudaKernel k = kernel.as(CudaKernel.class);
 * k.launch("saxpy", new int[] {blocks, 1, 1}, new int[] {256, 1, 1}, 0, null, 2.0f, x, y, n);
 * }</pre>
 *
 * <p>Once the kernel or its {@link org.mpibuild.MpiBuild} is closed, {@link #launch} and every method that
 * returns a handle throw {@code IllegalStateException} naming the kernel and why ("kernel saxpy: its MpiBuild
 * was closed"). A close on another thread waits for a launch in progress before it unloads the module.
 */
public final class CudaKernel implements LoadedProgram {
  private final CUcontext context;
  private final CUmodule module;
  private final NamedKernels<CUfunction> functions;
  private final UseGuard owner;
  private final Runnable unload;

  /**
   * @param owner the guard of the backend that loaded it, which closes it before the context is released
   * @param unload releases the module
   */
  CudaKernel(CUcontext context, CUmodule module, Map<String, CUfunction> functions, UseGuard owner, Runnable unload) {
    this.context = context;
    this.module = module;
    this.functions = new NamedKernels<>(functions, "module");
    this.owner = owner;
    this.unload = unload;
    owner.adopt(this);
  }

  CudaKernel(CUcontext context, CUmodule module, Map<String, CUfunction> functions, UseGuard owner) {
    this(context, module, functions, owner, () -> cuModuleUnload(module));
  }

  /**
   * @return the first function, the only one for single-kernel requests
   * @throws IllegalStateException if the kernel or its MpiBuild is closed
   */
  public CUfunction function() {
    return functions.first();
  }

  /**
   * Returns a function by name.
   *
   * @param name a name from {@link #kernelNames()}
   * @return the function
   * @throws IllegalArgumentException if there is none of that name
   * @throws IllegalStateException if the kernel or its MpiBuild is closed
   */
  public CUfunction function(String name) {
    return functions.get(name);
  }

  /**
   * @return the module
   * @throws IllegalStateException if the kernel or its MpiBuild is closed
   */
  public CUmodule module() {
    functions.check();
    return module;
  }

  /**
   * @return the context the module was loaded into (the device's primary context)
   * @throws IllegalStateException if the kernel or its MpiBuild is closed
   */
  public CUcontext context() {
    functions.check();
    return context;
  }

  @Override
  public List<String> kernelNames() {
    return functions.names();
  }

  /**
   * Launches a kernel. Arguments are device pointers ({@link CUdeviceptr}) and scalars ({@code Integer},
   * {@code Long}, {@code Float}, {@code Double}, {@code Short}, {@code Byte}), in the kernel's order.
   *
   * @param name the kernel
   * @param grid grid size, 3 values
   * @param block block size, 3 values
   * @param sharedMemBytes dynamic shared memory per block
   * @param stream the stream, or null for the default stream
   * @param args the kernel's arguments
   * @throws IllegalArgumentException for an argument of another type, naming its index
   * @throws IllegalStateException if the launch fails, with the CUDA error; if the kernel or its MpiBuild is
   *     closed, saying which (nothing reaches the driver then)
   */
  public void launch(String name, int[] grid, int[] block, int sharedMemBytes, CUstream stream, Object... args) {
    Pointer params = parameters(grid, block, args);
    // inside a use: a close on another thread waits for the launch before it unloads the module
    try (UseGuard.Use ignored = functions.guard().enter()) {
      CUfunction f = function(name);
      check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
      launch(f, name, grid, block, sharedMemBytes, stream, params);
    }
  }

  /**
   * Launches {@code function} on the calling thread's current context, with the arguments {@link #launch} takes:
   * for a kernel a program loaded itself, for example from {@link org.mpibuild.BinaryData#binary()} into a context
   * of its own.
   *
   * @param function the kernel, from the current context
   * @param name the kernel's name, for error messages
   * @param grid grid size, 3 values
   * @param block block size, 3 values
   * @param sharedMemBytes dynamic shared memory per block
   * @param stream the stream, or null for the default stream
   * @param args the kernel's arguments, as for {@link #launch}
   * @throws IllegalArgumentException for grid or block without 3 values, or an argument of another type, naming
   *     its index (nothing reaches the driver then)
   * @throws IllegalStateException if the launch fails, with the CUDA error
   */
  public static void launchFunction(CUfunction function, String name, int[] grid, int[] block, int sharedMemBytes,
      CUstream stream, Object... args) {
    launch(function, name, grid, block, sharedMemBytes, stream, parameters(grid, block, args));
  }

  private static void launch(CUfunction f, String name, int[] grid, int[] block, int sharedMemBytes,
      CUstream stream, Pointer params) {
    check(cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], sharedMemBytes, stream, params,
        null), "cuLaunchKernel(" + name + ")");
  }

  /** The parameter array that {@code cuLaunchKernel} takes, once grid and block are checked. */
  private static Pointer parameters(int[] grid, int[] block, Object[] args) {
    if (grid.length != 3 || block.length != 3) {
      throw new IllegalArgumentException("grid and block need 3 values each, got " + grid.length + " and "
          + block.length);
    }
    Pointer[] params = new Pointer[args.length];
    for (int i = 0; i < args.length; i++) {
      params[i] = pointerTo(i, args[i]);
    }
    return Pointer.to(params);
  }

  private static Pointer pointerTo(int index, Object a) {
    if (a instanceof NativePointerObject p) {
      return Pointer.to(p);
    } else if (a instanceof Integer v) {
      return Pointer.to(new int[] {v});
    } else if (a instanceof Long v) {
      return Pointer.to(new long[] {v});
    } else if (a instanceof Float v) {
      return Pointer.to(new float[] {v});
    } else if (a instanceof Double v) {
      return Pointer.to(new double[] {v});
    } else if (a instanceof Short v) {
      return Pointer.to(new short[] {v});
    } else if (a instanceof Byte v) {
      return Pointer.to(new byte[] {v});
    }
    throw new IllegalArgumentException("kernel argument " + index + " is a "
        + (a == null ? "null" : a.getClass().getName())
        + "; expected a CUdeviceptr or an Integer, Long, Float, Double, Short or Byte");
  }

  static void check(int rc, String what) {
    if (rc != CUresult.CUDA_SUCCESS) {
      throw new IllegalStateException(what + " failed: " + CUresult.stringFor(rc));
    }
  }

  @Override
  public void close() {
    close("it was closed");
  }

  @Override
  public void close(String why) {
    if (functions.release(why)) {
      owner.forget(this);
      unload.run();
    }
  }
}
