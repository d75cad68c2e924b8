package org.mpibuild.internal.settings;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.ServiceLoader;
import org.mpibuild.spi.BackendProvider;
import org.mpibuild.spi.MpiBinding;
import org.mpibuild.spi.Setting;

/**
 * Every setting, declared once: the core's ({@link CoreSettings}), then each installed MPI binding's and
 * backend's, as they declare them through the SPI ({@link MpiBinding#settings()},
 * {@link BackendProvider#settings()}).
 */
public final class SettingRegistry {
  private SettingRegistry() {}

  /** The settings of the core and of every installed plug-in, each once. */
  public static List<Setting<?>> all() {
    List<Setting<?>> out = new ArrayList<>(CoreSettings.ALL);
    for (MpiBinding b : MpiBinding.installed()) {
      out.addAll(b.settings());
    }
    for (BackendProvider p : ServiceLoader.load(BackendProvider.class, SettingRegistry.class.getClassLoader())) {
      out.addAll(p.settings());
    }
    return Collections.unmodifiableList(out);
  }
}
