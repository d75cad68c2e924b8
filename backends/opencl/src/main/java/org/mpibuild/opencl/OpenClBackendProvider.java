package org.mpibuild.opencl;

import java.util.List;
import java.util.ServiceLoader;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.BackendProvider;
import org.mpibuild.spi.Setting;
import org.mpibuild.spi.SettingSource;

/**
 * Opens the OpenCL backend. Found by the core through {@link ServiceLoader}.
 *
 * <p>Device selection: {@code MPI_BUILD_OPENCL_PLATFORM} (or {@code mpibuild.opencl.platform}) picks the
 * first platform whose name contains the value, ignoring case; {@code MPI_BUILD_OPENCL_DEVICE} (or
 * {@code mpibuild.opencl.device}) picks a device of that platform by index. By default, the first device
 * of the first platform that has one.
 */
public final class OpenClBackendProvider implements BackendProvider {
  /** The backend id written into binaries. */
  public static final String ID = "opencl";

  static final Setting<String> PLATFORM = Setting.text("MPI_BUILD_OPENCL_PLATFORM", "mpibuild.opencl.platform", null,
      "first with a device", "OpenCL platform whose name contains this (any case)");
  static final Setting<String> DEVICE = Setting.text("MPI_BUILD_OPENCL_DEVICE", "mpibuild.opencl.device", null, "`0`",
      "device index within that platform");

  /** Creates the provider; cheap, loads nothing native. */
  public OpenClBackendProvider() {}

  @Override
  public String id() {
    return ID;
  }

  @Override
  public Backend open(SettingSource settings) {
    return OpenClDevices.open(PLATFORM.read(settings), DEVICE.read(settings));
  }

  @Override
  public List<Setting<?>> settings() {
    return List.of(PLATFORM, DEVICE, QueueCommands.ON_QUEUE, PoclInProcessCompile.ON);
  }
}
