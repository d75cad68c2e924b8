package org.mpibuild.cuda;

import jcuda.JCudaVersion;
import jcuda.LibUtils;
import org.mpibuild.support.NativeLibraries;

/** JCuda's native bindings (the driver's, NVRTC's), loaded from this user's private directory. */
final class JCudaNatives {
  private JCudaNatives() {}

  /**
   * Loads the native library {@code base} of this JCuda version and makes the first call that loads it, from
   * this user's private directory (see {@link NativeLibraries#loadPrivately}): never a half-written file, never
   * another user's.
   *
   * @param binding the JCuda class whose native library it is
   * @param base the library's name without version and platform, for example {@code JCudaDriver}
   * @param firstCall the first call into the binding, which loads the library
   */
  static void load(Class<?> binding, String base, Runnable firstCall) {
    NativeLibraries.loadPrivately(binding, fileName(base), firstCall);
  }

  private static String fileName(String base) {
    return LibUtils.createLibraryFileName(LibUtils.createPlatformLibraryName(base + "-" + JCudaVersion.get()));
  }
}
