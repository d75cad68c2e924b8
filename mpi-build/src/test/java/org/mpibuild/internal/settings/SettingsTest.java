package org.mpibuild.internal.settings;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.mpibuild.internal.comm.Backoff;

class SettingsTest {
  /** A name that looks like a setting and is none is reported once, on stderr, with the nearest setting. */
  @Test
  void aMisspeltSettingIsReportedOnceOnStderrWithTheNearestName() {
    Properties props = new Properties();
    props.setProperty("mpibuild.chunkbytes", "1m");
    props.setProperty("mpibuild.it.job", "/tmp/x");
    org.mpibuild.spi.SettingSource src = org.mpibuild.spi.SettingSource.of(props, Map.of("MPI_BUILD_COLECTIVE_TIMEOUT",
        "3", "MPI_BUILD_MPIRUN", "mpirun", "MPI_BUILD_PROVISION_JDK", "1", "MPI_BUILD_CUDA_ARCH", "sm_80",
        "MPI_BUILD_MODE", "local"));
    java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
    java.io.PrintStream saved = System.err;
    System.setErr(new java.io.PrintStream(err, true));
    try {
      SettingNames.warnOnce(src);
      SettingNames.warnOnce(src);
    } finally {
      System.setErr(saved);
    }
    java.util.List<String> lines = err.toString().lines().filter(l -> l.startsWith("mpi-build:")).toList();
    assertEquals(java.util.List.of("mpi-build: warning: environment variable MPI_BUILD_COLECTIVE_TIMEOUT is not a "
        + "setting of mpi-build, so it is ignored; did you mean MPI_BUILD_COLLECTIVE_TIMEOUT? (every setting: "
        + "docs/configuration.md, or bin/mpi-build doctor)", "mpi-build: warning: system property mpibuild.chunkbytes "
        + "is not a setting of mpi-build, so it is ignored; did you mean mpibuild.chunkBytes? (every setting: "
        + "docs/configuration.md, or bin/mpi-build doctor)"), lines);
  }

  @Test
  void defaults() {
    Settings s = TestSettings.from(new Properties(), Map.of());
    assertEquals(Settings.Mode.AUTO, s.mode());
    assertEquals(null, s.backend());
    assertEquals(4 << 20, s.chunkBytes());
    assertEquals(new Backoff(1_000_000), s.waiting());
  }

  @Test
  void propertyWinsOverEnvironment() {
    Properties p = new Properties();
    p.setProperty("mpibuild.chunkBytes", "4k");
    Settings s = TestSettings.from(p, Map.of("MPI_BUILD_CHUNK_BYTES", "1m", "MPI_BUILD_MODE", "LOCAL",
        "MPI_BUILD_BACKEND", "opencl"));
    assertEquals(4096, s.chunkBytes());
    assertEquals(Settings.Mode.LOCAL, s.mode());
    assertEquals("opencl", s.backend());
  }

  /**
   * Durations documented as more than 0 refuse 0 and what rounds to it, in the environment and the property form;
   * the builder's compileTimeout(Duration.ZERO) too (every build failed with it before).
   */
  @Test
  void aDurationThatMustBeMoreThanZeroRefusesZero() {
    for (String[] setting : new String[][] {{"MPI_BUILD_COMPILE_TIMEOUT", "mpibuild.compileTimeoutSeconds"},
        {"MPI_BUILD_CACHE_LOCK_STALE", "mpibuild.cache.lockStaleSeconds"}}) {
      for (String zero : new String[] {"0", "0s", "0.0004", " 0 "}) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> TestSettings.from(new Properties(), Map.of(setting[0], zero)), setting[0] + "=" + zero);
        assertTrue(e.getMessage().contains(setting[0]) && e.getMessage().contains("from 1 ms"), e.getMessage());
        Properties p = new Properties();
        p.setProperty(setting[1], zero);
        e = assertThrows(IllegalArgumentException.class, () -> TestSettings.from(p, Map.of()), setting[1] + "=" + zero);
        assertTrue(e.getMessage().contains(setting[1]) && e.getMessage().contains("from 1 ms"), e.getMessage());
      }
      assertEquals(java.time.Duration.ofMillis(1), CoreSettings.COMPILE_TIMEOUT.read(org.mpibuild.spi.SettingSource.of(
          new Properties(), Map.of("MPI_BUILD_COMPILE_TIMEOUT", "0.001"))));
    }
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> org.mpibuild.MpiBuild.builder().compileTimeout(java.time.Duration.ZERO));
    assertTrue(e.getMessage().contains("compile"), e.getMessage());
  }

  @Test
  void badValuesNameTheSetting() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> TestSettings.from(new Properties(), Map.of("MPI_BUILD_CHUNK_BYTES", "lots")));
    assertTrue(e.getMessage().contains("MPI_BUILD_CHUNK_BYTES") && e.getMessage().contains("'lots'"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> TestSettings.from(new Properties(), Map.of("MPI_BUILD_CHUNK_BYTES", "3g")));
    assertTrue(e.getMessage().contains("3221225472"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> TestSettings.from(new Properties(), Map.of("MPI_BUILD_MODE", "cluster")));
    assertTrue(e.getMessage().contains("'cluster'"), e.getMessage());
  }
}
