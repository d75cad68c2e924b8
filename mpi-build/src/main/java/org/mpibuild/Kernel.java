package org.mpibuild;

import java.util.List;

/**
 * A program loaded on this rank's device, with its kernels created and ready to launch without more
 * compiling. Obtained from {@link MpiBuild#mpiBuildKernel(KernelSource, int)}.
 *
 * <p>The device handles belong to the backend; reach them with {@link #as(Class)}, for example
 * {@code kernel.as(OpenClKernel.class).kernel("saxpy")}. Close the kernel to release them.
 *
 * <p><b>After close.</b> Once the kernel is closed, or its {@link MpiBuild} is (which closes it first),
 * {@link #as(Class)}, {@link #binaryData()} and every call of the backend's view that would hand out a
 * device handle or use one ({@code OpenClKernel.kernel(name)}, {@code queue()}, {@code CudaKernel.launch},
 * ...) throw {@code IllegalStateException} naming the kernel and why, for example
 * "kernel saxpy: its MpiBuild was closed". Closing twice does nothing. A close on one thread waits for a
 * launch in progress on another ({@code CudaKernel.launch}) before it releases anything. Handles obtained
 * before close must not be used after it. The names, backend, target and statistics stay readable.
 */
public interface Kernel extends AutoCloseable {

  /**
   * Returns the names of the kernels created from the program, in request order.
   *
   * @return the kernel names
   */
  List<String> kernelNames();

  /**
   * Returns the id of the backend that built the binary, for example {@code "opencl"}.
   *
   * @return the backend id
   */
  String backend();

  /**
   * Returns the identity of the device the binary was built for.
   *
   * @return the target identity
   */
  String target();

  /**
   * Returns the binary with its metadata, to store or ship it your own way and load it later with
   * {@link MpiBuild#buildKernelFromBinaryData(BinaryData)}. The data is a copy of its own: it stays valid
   * after the kernel is closed.
   *
   * <p>In a job of one rank the kernel may be ready before its binary is made (the binary only fills the
   * cache there; see {@code docs/launch-shapes.md}): this then waits for it, or, where no cache would keep it
   * or it could not be made, compiles it now, which may take as long as the build did. It is then a call of
   * the kernel's MpiBuild: another thread's call of that instance meanwhile is refused, as calls are.
   *
   * @return the binary data
   * @throws IllegalStateException if the kernel or its MpiBuild is closed (a received binary's memory is
   *     reused then), or if a binary made after the kernel could not be made, saying why
   */
  BinaryData binaryData();

  /**
   * Returns what this rank did to obtain the kernel, and how long it took.
   *
   * @return the build statistics of this rank
   */
  BuildStats stats();

  /**
   * Returns the backend's own view of this kernel, which holds the device handles.
   *
   * @param type the backend's kernel class, for example {@code OpenClKernel.class}
   * @param <T> that class
   * @return this kernel as {@code type}
   * @throws IllegalArgumentException if the kernel was built by another backend
   * @throws IllegalStateException if the kernel or its MpiBuild is closed, saying which
   */
  <T> T as(Class<T> type);

  /**
   * Releases the device objects of this kernel. Idempotent. In a job of one rank with a cache, the binary for the
   * cache may be taken from the program first (milliseconds: see docs/launch-shapes.md, "A job of one rank").
   */
  @Override
  void close();
}
