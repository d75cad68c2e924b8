package org.mpibuild.spi;

import java.util.List;

/**
 * A program loaded on a device, with its kernels created. Backends return their own public type, which
 * users reach through {@link org.mpibuild.Kernel#as(Class)}.
 */
public interface LoadedProgram extends AutoCloseable {

  /**
   * Returns the names of the kernels created from this program.
   *
   * @return the names, in request order
   */
  List<String> kernelNames();

  /** Releases the device objects of this program. */
  @Override
  void close();
}
