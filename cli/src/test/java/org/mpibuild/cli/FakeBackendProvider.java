package org.mpibuild.cli;

import org.mpibuild.spi.Backend;
import org.mpibuild.spi.BackendProvider;
import org.mpibuild.spi.SettingSource;
import org.mpibuild.testkit.FakeBackend;

/**
 * The kit's fake backend under the id {@code fake}, found through ServiceLoader on the tests' class path only,
 * so that {@code precompile --backend fake} builds without a device. Never chosen by default.
 */
public final class FakeBackendProvider implements BackendProvider {
  @Override
  public String id() {
    return "fake";
  }

  @Override
  public Backend open(SettingSource settings) {
    return new FakeBackend();
  }

  @Override
  public int priority() {
    return -1000;
  }
}
