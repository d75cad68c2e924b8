package org.mpibuild.opencl;

import static org.jocl.CL.clReleaseKernel;
import static org.jocl.CL.clReleaseProgram;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.FutureTask;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_device_id;
import org.jocl.cl_kernel;
import org.jocl.cl_program;
import org.mpibuild.spi.LoadedProgram;
import org.mpibuild.spi.NamedKernels;

/**
 * The OpenCL view of a {@link org.mpibuild.Kernel}: the program, its kernels, and the context, device and
 * command queue they belong to. Reach it with {@code kernel.as(OpenClKernel.class)}.
 *
 * <p>The context and queue belong to the {@link org.mpibuild.MpiBuild} that made the kernel and stay
 * valid until it is closed; {@link #close()} releases the program and its kernels. Once either is closed,
 * every method here that returns a handle throws {@code IllegalStateException} naming the kernel and why
 * ("kernel saxpy: its MpiBuild was closed"): a released handle is never handed out. Handles obtained
 * before must not be used after.
 */
public final class OpenClKernel implements LoadedProgram {
  private final OpenClBackend backend;
  private final cl_program program;
  private final NamedKernels<cl_kernel> kernels;
  /** The binary made from this program when wanted, and its directory in PoCL's cache ({@link PoclLaunchedBinary}). */
  private volatile FutureTask<byte[]> binary;
  private volatile Path directory;

  OpenClKernel(OpenClBackend backend, cl_program program, Map<String, cl_kernel> kernels) {
    this.backend = backend;
    this.program = program;
    this.kernels = new NamedKernels<>(kernels, "program");
    backend.guard().adopt(this);
  }

  /**
   * Returns the first kernel.
   *
   * @return the first kernel, the only one for single-kernel sources
   * @throws IllegalStateException if the kernel or its MpiBuild is closed
   */
  public cl_kernel kernel() {
    return kernels.first();
  }

  /**
   * Returns a kernel by name.
   *
   * @param name a name from {@link #kernelNames()}
   * @return the kernel
   * @throws IllegalArgumentException if there is no kernel of that name
   * @throws IllegalStateException if the kernel or its MpiBuild is closed
   */
  public cl_kernel kernel(String name) {
    return kernels.get(name);
  }

  @Override
  public List<String> kernelNames() {
    return kernels.names();
  }

  /**
   * @return the program
   * @throws IllegalStateException if the kernel or its MpiBuild is closed
   */
  public cl_program program() {
    kernels.check();
    return program;
  }

  /**
   * @return the context the program was loaded into
   * @throws IllegalStateException if the kernel or its MpiBuild is closed
   */
  public cl_context context() {
    kernels.check();
    return backend.context();
  }

  /**
   * @return the device the program was loaded on
   * @throws IllegalStateException if the kernel or its MpiBuild is closed
   */
  public cl_device_id device() {
    kernels.check();
    return backend.device();
  }

  /**
   * @return an in-order command queue on {@link #device()}
   * @throws IllegalStateException if the kernel or its MpiBuild is closed
   */
  public cl_command_queue queue() {
    kernels.check();
    return backend.queue();
  }

  @Override
  public void close() {
    close("it was closed");
  }

  /** At close, {@code binary} is made first, if nobody made it, then {@code directory} deleted after the release. */
  void beforeRelease(FutureTask<byte[]> binary, Path directory) {
    this.binary = binary;
    this.directory = directory;
  }

  @Override
  public void close(String why) {
    if (!kernels.release(why)) {
      return;
    }
    backend.guard().forget(this);
    if (binary != null) {
      PoclLaunchedBinary.settle(binary); // made from this program: before it is released
      binary = null;
    }
    for (cl_kernel k : kernels.all()) {
      clReleaseKernel(k);
    }
    // commands still queued, or the program's own retains, keep it alive: then its directory stays for PoCL
    boolean last = directory != null && PoclLaunchedBinary.referenceCount(program) == 1;
    clReleaseProgram(program);
    if (last) {
      PoclLaunchedBinary.delete(directory);
    } else if (directory != null) {
      PoclLaunchedBinary.deleteAtExit(directory);
    }
  }
}
