package org.mpibuild.spi;

import java.util.List;

/**
 * Finds and opens a {@link Backend}. Listed in {@code META-INF/services/org.mpibuild.spi.BackendProvider}.
 * Creating a provider must be cheap and must not load native libraries; {@link #open} does that.
 */
public interface BackendProvider {

  /**
   * Returns the id of the backend this provider opens, for example {@code "opencl"}.
   *
   * @return the id
   */
  String id();

  /**
   * Opens the backend on this rank's device.
   *
   * @param settings where the backend reads its {@link #settings()}
   * @return the backend
   * @throws org.mpibuild.BackendUnavailableException with the reason, if the backend cannot run here
   */
  Backend open(SettingSource settings);

  /**
   * Opens the backend on this rank's device, knowing where this rank runs among its node's ranks. The core
   * calls this one; a backend with one device per rank (CUDA) overrides it.
   *
   * @param settings where the backend reads its {@link #settings()}
   * @param placement this rank's rank among the ranks of its node
   * @return the backend
   * @throws org.mpibuild.BackendUnavailableException with the reason, if the backend cannot run here
   */
  default Backend open(SettingSource settings, Placement placement) {
    return open(settings);
  }

  /**
   * Returns the preference among backends when none is named: the highest usable one is chosen.
   *
   * @return the priority; 0 by default
   */
  default int priority() {
    return 0;
  }

  /**
   * Opens the backend for an automatic choice, which may demand more than {@link #open} (CUDA, for
   * example, is chosen automatically only when a GPU is usable).
   *
   * @param settings where the backend reads its {@link #settings()}
   * @return the backend
   * @throws org.mpibuild.BackendUnavailableException with the reason, if it should not be chosen here
   */
  default Backend openAsDefault(SettingSource settings) {
    return open(settings);
  }

  /**
   * Opens the backend for an automatic choice, knowing where this rank runs among its node's ranks. The
   * core calls this one.
   *
   * @param settings where the backend reads its {@link #settings()}
   * @param placement this rank's rank among the ranks of its node
   * @return the backend
   * @throws org.mpibuild.BackendUnavailableException with the reason, if it should not be chosen here
   */
  default Backend openAsDefault(SettingSource settings, Placement placement) {
    return openAsDefault(settings);
  }

  /**
   * Returns the settings this plug-in reads, so that {@code mpi-build doctor} and the README list them.
   *
   * @return its settings; none by default
   */
  default List<Setting<?>> settings() {
    return List.of();
  }
}
