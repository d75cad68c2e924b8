package org.mpibuild.opencl;

import static org.jocl.CL.clReleaseKernel;
import static org.jocl.CL.clReleaseProgram;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_device_id;
import org.jocl.cl_kernel;
import org.jocl.cl_program;
import org.mpibuild.spi.LoadedProgram;

/**
 * The OpenCL view of a {@link org.mpibuild.Kernel}: the program, its kernels, and the context, device and
 * command queue they belong to. Reach it with {@code kernel.as(OpenClKernel.class)}.
 *
 * <p>The context and queue belong to the {@link org.mpibuild.MpiBuild} that made the kernel and stay
 * valid until it is closed; {@link #close()} releases the program and its kernels.
 */
public final class OpenClKernel implements LoadedProgram {
  private final OpenClBackend backend;
  private final cl_program program;
  private final Map<String, cl_kernel> kernels;
  private boolean closed;

  OpenClKernel(OpenClBackend backend, cl_program program, Map<String, cl_kernel> kernels) {
    this.backend = backend;
    this.program = program;
    this.kernels = new LinkedHashMap<>(kernels);
  }

  /** @return the first kernel, the only one for single-kernel sources */
  public cl_kernel kernel() {
    return kernels.values().iterator().next();
  }

  /**
   * Returns a kernel by name.
   *
   * @param name a name from {@link #kernelNames()}
   * @return the kernel
   * @throws IllegalArgumentException if there is no kernel of that name
   */
  public cl_kernel kernel(String name) {
    cl_kernel k = kernels.get(name);
    if (k == null) {
      throw new IllegalArgumentException("no kernel '" + name + "' in this program; it has " + kernelNames());
    }
    return k;
  }

  @Override
  public List<String> kernelNames() {
    return new ArrayList<>(kernels.keySet());
  }

  /** @return the program */
  public cl_program program() {
    return program;
  }

  /** @return the context the program was loaded into */
  public cl_context context() {
    return backend.context();
  }

  /** @return the device the program was loaded on */
  public cl_device_id device() {
    return backend.device();
  }

  /** @return an in-order command queue on {@link #device()} */
  public cl_command_queue queue() {
    return backend.queue();
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (cl_kernel k : kernels.values()) {
      clReleaseKernel(k);
    }
    clReleaseProgram(program);
  }
}
