package org.mpibuild.internal.startup;

import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import org.mpibuild.BackendUnavailableException;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.BackendProvider;
import org.mpibuild.spi.Placement;
import org.mpibuild.spi.SettingSource;

/** Finds backends on the class path through {@link ServiceLoader}. */
public final class Backends {
  private Backends() {}

  /** Ids of the backends on the class path, in class-path order. */
  public static List<String> available() {
    List<String> ids = new ArrayList<>();
    for (BackendProvider p : ServiceLoader.load(BackendProvider.class, Backends.class.getClassLoader())) {
      ids.add(p.id());
    }
    return ids;
  }

  /**
   * Opens the backend {@code id}, or the best one that can run here when {@code id} is null, reading its
   * settings from {@code settings}.
   *
   * @throws BackendUnavailableException if it is absent, ambiguous, or cannot run here
   */
  public static Backend open(String id, SettingSource settings, Placement placement) {
    List<BackendProvider> providers = new ArrayList<>();
    ServiceLoader.load(BackendProvider.class, Backends.class.getClassLoader()).forEach(providers::add);
    if (providers.isEmpty() && id == null) {
      throw new BackendUnavailableException("no mpi-build backend on the class path "
          + "(add mpi-build-opencl, for example)", null);
    }
    if (id == null) {
      // The highest-priority backend that can run here: CUDA when a GPU is usable, else OpenCL.
      providers.sort((a, b) -> Integer.compare(b.priority(), a.priority()));
      StringBuilder reasons = new StringBuilder();
      for (BackendProvider p : providers) {
        try {
          return p.openAsDefault(settings, placement);
        } catch (BackendUnavailableException e) {
          reasons.append("\n  ").append(e.getMessage());
        }
      }
      throw new BackendUnavailableException("no backend can run here:" + reasons, null);
    }
    for (BackendProvider p : providers) {
      if (p.id().equals(id)) {
        return p.open(settings, placement);
      }
    }
    throw new BackendUnavailableException("backend '" + id + "' is not on the class path; available: "
        + (providers.isEmpty() ? "none" : available()), null);
  }
}
