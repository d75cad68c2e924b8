package org.mpibuild.spi;

import java.util.List;

/**
 * A program loaded on a device, with its kernels created. Backends return their own public type, which
 * users reach through {@link org.mpibuild.Kernel#as(Class)}.
 */
public interface LoadedProgram extends AutoCloseable, UseGuard.Dependent {

  /**
   * Returns the names of the kernels created from this program.
   *
   * @return the names, in request order
   */
  List<String> kernelNames();

  /** Releases the device objects of this program; later calls that would hand out a handle throw. */
  @Override
  void close();

  /**
   * Releases the device objects of this program because its owner closed (the kernel, or the
   * {@link org.mpibuild.MpiBuild}); later calls that would hand out a handle throw
   * {@code IllegalStateException} naming {@code why}. Idempotent; by default {@link #close()}.
   *
   * @param why for example "its MpiBuild was closed"
   */
  @Override
  default void close(String why) {
    close();
  }
}
