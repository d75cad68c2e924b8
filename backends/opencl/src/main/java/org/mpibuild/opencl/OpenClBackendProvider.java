package org.mpibuild.opencl;

import org.mpibuild.spi.Backend;
import org.mpibuild.spi.BackendProvider;

/**
 * Opens the OpenCL backend. Found by the core through {@link java.util.ServiceLoader}.
 *
 * <p>Device selection: {@code MPI_BUILD_OPENCL_PLATFORM} (or {@code mpibuild.opencl.platform}) picks the
 * first platform whose name contains the value, ignoring case; {@code MPI_BUILD_OPENCL_DEVICE} (or
 * {@code mpibuild.opencl.device}) picks a device of that platform by index. By default, the first device
 * of the first platform that has one.
 */
public final class OpenClBackendProvider implements BackendProvider {
  /** The backend id written into binaries. */
  public static final String ID = "opencl";

  /** Creates the provider; cheap, loads nothing native. */
  public OpenClBackendProvider() {}

  @Override
  public String id() {
    return ID;
  }

  @Override
  public Backend open() {
    return OpenClBackend.open(setting("mpibuild.opencl.platform", "MPI_BUILD_OPENCL_PLATFORM"),
        setting("mpibuild.opencl.device", "MPI_BUILD_OPENCL_DEVICE"));
  }

  private static String setting(String property, String variable) {
    String v = System.getProperty(property);
    return v != null ? v : System.getenv(variable);
  }
}
