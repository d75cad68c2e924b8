package org.mpibuild;

import java.util.List;
import org.mpibuild.internal.settings.SettingNames;
import org.mpibuild.internal.settings.SettingRegistry;
import org.mpibuild.spi.Setting;
import org.mpibuild.spi.SettingSource;

/**
 * What can be configured: every setting of the core and of the installed backends and MPI bindings, for
 * tools that list them ({@code mpi-build doctor}, the README's configuration table) and for programs that
 * check their environment. Each setting is declared once, where it is read; this class only gathers them.
 */
public final class Configuration {
  private Configuration() {}

  /**
   * Returns every setting: the core's, then each installed MPI binding's and backend's.
   *
   * @return the settings, each once
   */
  public static List<Setting<?>> all() {
    return SettingRegistry.all();
  }

  /**
   * Returns one line per {@code MPI_BUILD_*} environment variable or {@code mpibuild.*} system property in
   * {@code source} that names no setting (and is not one of the names the launch scripts, provisioning or
   * tests read), each naming the nearest setting of {@link #all()}; empty when there is none. The library
   * prints these once per process when an instance is created; {@code mpi-build doctor} lists them.
   *
   * @param source where settings come from
   * @return the lines, by name
   */
  public static List<String> misspelt(SettingSource source) {
    return SettingNames.misspelt(source);
  }
}
