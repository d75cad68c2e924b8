package org.mpibuild.opencl;

import static org.jocl.CL.CL_DEVICE_NAME;
import static org.jocl.CL.CL_DEVICE_TYPE_ALL;
import static org.jocl.CL.CL_DEVICE_VERSION;
import static org.jocl.CL.CL_DRIVER_VERSION;
import static org.jocl.CL.CL_PLATFORM_NAME;
import static org.jocl.CL.CL_PLATFORM_VERSION;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.clCreateCommandQueueWithProperties;
import static org.jocl.CL.clCreateContext;
import static org.jocl.CL.clGetDeviceIDs;
import static org.jocl.CL.clGetPlatformIDs;
import static org.jocl.CL.clReleaseContext;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import org.jocl.CL;
import org.jocl.LibUtils;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_device_id;
import org.jocl.cl_platform_id;
import org.jocl.cl_queue_properties;
import org.mpibuild.BackendUnavailableException;
import org.mpibuild.support.BackendSupport;
import org.mpibuild.support.NativeLibraries;

/**
 * Finding the OpenCL device a backend runs on: JOCL's native library loaded once, the platforms and their
 * devices, the choice made by {@code MPI_BUILD_OPENCL_PLATFORM} and {@code MPI_BUILD_OPENCL_DEVICE} (or by
 * indexes another process of the job found), and why none is usable when none is.
 */
final class OpenClDevices {
  private static volatile String nativeProblem;
  private static volatile boolean nativeReady;

  private OpenClDevices() {}

  /**
   * The backend on the first device of the first platform whose name contains {@code platformSelector} (any
   * platform if null), at index {@code deviceSelector} (0 if null).
   *
   * @throws BackendUnavailableException naming why no device is usable
   */
  static OpenClBackend open(String platformSelector, String deviceSelector) {
    loadNatives();
    cl_platform_id[] platforms = platforms();
    boolean poclWithoutDevice = false;
    for (int p = 0; p < platforms.length; p++) {
      cl_platform_id platform = platforms[p];
      String name = ClInfo.platformInfo(platform, CL_PLATFORM_NAME);
      if (platformSelector != null && !name.toLowerCase(Locale.ROOT).contains(platformSelector.toLowerCase(Locale.ROOT))) {
        continue;
      }
      cl_device_id[] devices = devices(platform);
      if (devices.length == 0) {
        poclWithoutDevice |= name.contains("Portable Computing Language");
        continue;
      }
      int index = 0;
      if (deviceSelector != null) {
        try {
          index = Integer.parseInt(deviceSelector.trim());
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException("MPI_BUILD_OPENCL_DEVICE is '" + deviceSelector
              + "'; expected a device index", e);
        }
        if (index < 0 || index >= devices.length) {
          throw unavailable("MPI_BUILD_OPENCL_DEVICE=" + index + " but platform '" + name + "' has "
              + devices.length + " device(s)", null);
        }
      }
      return onDevice(platform, devices[index], p, index);
    }
    String why = poclWithoutDevice ? poclCacheProblem(System.getenv()) : null;
    throw unavailable((platformSelector == null ? "no OpenCL device on any platform"
        : "no OpenCL platform with a device matches MPI_BUILD_OPENCL_PLATFORM='" + platformSelector + "'")
        + (why == null ? "" : ": " + why), null);
  }

  /**
   * PoCL's kernel cache, where {@code pocl_cache_init_topdir} puts it with the kernel cache on: {@code POCL_CACHE_DIR},
   * else {@code $XDG_CACHE_HOME/pocl/kcache}, else {@code $HOME/.cache/pocl/kcache}.
   */
  static Path poclCacheTop(Map<String, String> env) {
    String home = env.getOrDefault("HOME", System.getProperty("user.home"));
    return switch (cacheSetting(env)) {
      case "POCL_CACHE_DIR" -> Path.of(env.get("POCL_CACHE_DIR"));
      case "XDG_CACHE_HOME" -> Path.of(env.get("XDG_CACHE_HOME"), "pocl", "kcache");
      default -> Path.of(home == null ? "/" : home, ".cache", "pocl", "kcache");
    };
  }

  /** The variable PoCL's cache directory comes from. */
  private static String cacheSetting(Map<String, String> env) {
    String setting = env.get("POCL_CACHE_DIR");
    String xdg = env.get("XDG_CACHE_HOME");
    return setting != null && !setting.isEmpty() ? "POCL_CACHE_DIR"
        : xdg != null && !xdg.isEmpty() ? "XDG_CACHE_HOME" : "HOME";
  }

  /**
   * Why PoCL would hide its devices for want of a cache directory, or null. PoCL offers no device at all when
   * it cannot create its kernel cache ({@code POCL_CACHE_DIR}, else {@code $XDG_CACHE_HOME/pocl}, else
   * {@code $HOME/.cache/pocl}): {@code pocl_init_devices} ends with {@code CL_DEVICE_NOT_FOUND} when
   * {@code pocl_cache_init_topdir} fails, and its "Cache directory initialization failed" shows only under
   * {@code POCL_DEBUG}.
   */
  static String poclCacheProblem(Map<String, String> env) {
    String named = cacheSetting(env);
    Path dir = named.equals("POCL_CACHE_DIR") ? poclCacheTop(env) : poclCacheTop(env).getParent();
    Path existing = dir;
    while (existing != null && !Files.exists(existing)) {
      existing = existing.getParent();
    }
    String cause = existing == null ? null
        : !Files.isDirectory(existing) ? existing + " is not a directory"
        : !Files.isWritable(existing) ? existing + " is not writable by this user"
        : null;
    return cause == null ? null : "PoCL cannot create its cache directory " + dir + " (from " + named + "): "
        + cause + "; PoCL then shows no device. Point POCL_CACHE_DIR at a directory this user can write";
  }

  /** The backend on the device at the given indexes, as another process of this job found it. */
  static OpenClBackend open(int platformIndex, int deviceIndex) {
    loadNatives();
    cl_platform_id platform = platforms()[platformIndex];
    return onDevice(platform, devices(platform)[deviceIndex], platformIndex, deviceIndex);
  }

  private static cl_platform_id[] platforms() {
    int[] count = new int[1];
    int rc = clGetPlatformIDs(0, null, count);
    if (rc != CL_SUCCESS || count[0] == 0) {
      throw unavailable("no OpenCL platform (" + CL.stringFor_errorCode(rc)
          + "); install an ICD such as PoCL (Debian: pocl-opencl-icd)", null);
    }
    cl_platform_id[] platforms = new cl_platform_id[count[0]];
    ClInfo.check(clGetPlatformIDs(platforms.length, platforms, null), "clGetPlatformIDs");
    return platforms;
  }

  /** The platform's devices; none when it reports none or fails to list them. */
  private static cl_device_id[] devices(cl_platform_id platform) {
    int[] n = new int[1];
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, null, n) != CL_SUCCESS || n[0] == 0) {
      return new cl_device_id[0];
    }
    cl_device_id[] devices = new cl_device_id[n[0]];
    ClInfo.check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, devices.length, devices, null), "clGetDeviceIDs");
    return devices;
  }

  private static OpenClBackend onDevice(cl_platform_id platform, cl_device_id device, int platformIndex,
      int deviceIndex) {
    String target = "platform=" + ClInfo.platformInfo(platform, CL_PLATFORM_NAME) + " " + ClInfo.platformInfo(platform, CL_PLATFORM_VERSION)
        + "; device=" + ClInfo.deviceInfo(device, CL_DEVICE_NAME) + "; device-version=" + ClInfo.deviceInfo(device, CL_DEVICE_VERSION)
        + "; driver=" + ClInfo.deviceInfo(device, CL_DRIVER_VERSION);
    int[] err = new int[1];
    cl_context context = clCreateContext(null, 1, new cl_device_id[] {device}, null, null, err);
    ClInfo.check(err[0], "clCreateContext");
    cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, new cl_queue_properties(), err);
    if (err[0] != CL_SUCCESS) {
      clReleaseContext(context);
      ClInfo.check(err[0], "clCreateCommandQueueWithProperties");
    }
    String compiler = "JOCL " + OpenClBackend.JOCL_LIBRARY + "; platform=" + ClInfo.platformInfo(platform, CL_PLATFORM_NAME) + " "
        + ClInfo.platformInfo(platform, CL_PLATFORM_VERSION) + "; driver=" + ClInfo.deviceInfo(device, CL_DRIVER_VERSION);
    boolean pocl = ClInfo.platformInfo(platform, CL_PLATFORM_NAME).startsWith(PoclSpecialization.PLATFORM_NAME);
    return new OpenClBackend(device, context, queue, target, compiler, platformIndex, deviceIndex, pocl);
  }

  /**
   * Loads JOCL's native library once, from this user's private directory (see
   * {@link NativeLibraries#loadPrivately}): never a half-written file, never another user's.
   */
  private static synchronized void loadNatives() {
    if (nativeReady) {
      return;
    }
    if (nativeProblem != null) {
      throw unavailable(nativeProblem, null);
    }
    try {
      String file = System.mapLibraryName(LibUtils.createPlatformLibraryName(OpenClBackend.JOCL_LIBRARY));
      NativeLibraries.loadPrivately(CL.class, file, () -> CL.clGetPlatformIDs(0, null, new int[1]));
      nativeReady = true;
    } catch (UncheckedIOException e) {
      nativeProblem = "cannot put JOCL's native library where it can load (" + e.getMessage() + ")";
      throw unavailable(nativeProblem, e);
    } catch (LinkageError | RuntimeException e) {
      String m = String.valueOf(e.getMessage());
      nativeProblem = m.contains("Could not initialize native OpenCL library") || m.contains("libOpenCL")
          ? "the OpenCL ICD loader libOpenCL.so cannot be loaded (" + BackendSupport.firstLine(e) + "); install it "
              + "(Debian: ocl-icd-opencl-dev) and an OpenCL driver (PoCL: pocl-opencl-icd)"
          : "JOCL's native library cannot be loaded (" + BackendSupport.firstLine(e) + ")";
      throw unavailable(nativeProblem, e);
    }
  }

  private static BackendUnavailableException unavailable(String why, Throwable cause) {
    return new BackendUnavailableException("OpenCL backend unavailable: " + why, cause);
  }

}
