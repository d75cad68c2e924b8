package org.mpibuild.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

class SettingsTest {
  @Test
  void defaults() {
    Settings s = Settings.from(new Properties(), Map.of());
    assertEquals(Settings.Mode.AUTO, s.mode());
    assertEquals(null, s.backend());
    assertEquals(4 << 20, s.chunkBytes());
    assertEquals(new Waiting(1_000_000), s.waiting());
  }

  @Test
  void propertyWinsOverEnvironment() {
    Properties p = new Properties();
    p.setProperty("mpibuild.chunkBytes", "4k");
    Settings s = Settings.from(p, Map.of("MPI_BUILD_CHUNK_BYTES", "1m", "MPI_BUILD_MODE", "LOCAL",
        "MPI_BUILD_BACKEND", "opencl"));
    assertEquals(4096, s.chunkBytes());
    assertEquals(Settings.Mode.LOCAL, s.mode());
    assertEquals("opencl", s.backend());
  }

  @Test
  void badValuesNameTheSetting() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Settings.from(new Properties(), Map.of("MPI_BUILD_CHUNK_BYTES", "lots")));
    assertTrue(e.getMessage().contains("MPI_BUILD_CHUNK_BYTES") && e.getMessage().contains("'lots'"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> Settings.from(new Properties(), Map.of("MPI_BUILD_CHUNK_BYTES", "3g")));
    assertTrue(e.getMessage().contains("3221225472"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> Settings.from(new Properties(), Map.of("MPI_BUILD_MODE", "cluster")));
    assertTrue(e.getMessage().contains("'cluster'"), e.getMessage());
  }
}
