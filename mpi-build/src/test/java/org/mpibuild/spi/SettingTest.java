package org.mpibuild.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.mpibuild.Configuration;
import org.mpibuild.MpiBuild;

class SettingTest {
  static SettingSource env(String variable, String value) {
    return SettingSource.of(new Properties(), Map.of(variable, value));
  }

  @Test
  void outOfRangeValuesAreRefusedWhenReadNamingTheSettingAndTheRange() {
    Setting<Duration> timeout = Setting.seconds("MPI_BUILD_X", "mpibuild.x", Duration.ofSeconds(1), Duration.ofDays(1),
        "`1`", "test");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> timeout.read(env("MPI_BUILD_X", "99999999999")));
    assertTrue(e.getMessage().contains("MPI_BUILD_X") && e.getMessage().contains("99999999999")
        && e.getMessage().contains("from 0 to 86400"), e.getMessage());
    Setting<Long> size = Setting.bytes("MPI_BUILD_Y", null, 1, 1, 1L << 30, "`1`", "test");
    e = assertThrows(IllegalArgumentException.class, () -> size.read(env("MPI_BUILD_Y", "99999999999999t")));
    assertTrue(e.getMessage().contains("MPI_BUILD_Y") && e.getMessage().contains("'99999999999999t'"), e.getMessage());
  }

  @Test
  void durationsTakeOneGrammarAndNothingElse() {
    assertEquals(Duration.ofSeconds(30), Setting.parseDuration("30s"));
    assertEquals(Duration.ofMinutes(5), Setting.parseDuration("5m"));
    assertEquals(Duration.ofMinutes(90), Setting.parseDuration("1.5h"));
    assertEquals(Duration.ofDays(2), Setting.parseDuration("2D"));
    assertEquals(Duration.ofSeconds(600), Setting.parseDuration(" 600 "));
    assertEquals(Duration.ofMillis(250), Setting.parseDuration("0.25"));
    for (String bad : new String[] {"1f", "1e3", "1d5", "-1", "1 day", "", "0x10", "NaN", "Infinity", "1.", ".5"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Setting.parseDuration(bad), bad);
      assertTrue(e.getMessage().contains("'" + bad + "'"), e.getMessage());
    }
    Setting<Duration> timeout = Setting.seconds("MPI_BUILD_X", "mpibuild.x", Duration.ofSeconds(1), Duration.ofDays(1),
        "`1`", "test");
    assertEquals(Duration.ofDays(1), timeout.read(env("MPI_BUILD_X", "1d")), "1d is a day, not 1 second");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> timeout.read(env("MPI_BUILD_X", "1f")));
    assertTrue(e.getMessage().contains("is '1f'") && e.getMessage().contains("MPI_BUILD_X"), e.getMessage());
  }

  @Test
  void onlyOffTurnsADeadlineOff() {
    Setting<Duration> deadline = Setting.deadline("MPI_BUILD_D", "mpibuild.d", Duration.ofMinutes(10), Duration.ofDays(7),
        "`600`", "test");
    assertEquals(Duration.ZERO, deadline.read(env("MPI_BUILD_D", "off")));
    assertEquals(Duration.ofMillis(1), deadline.read(env("MPI_BUILD_D", "0.001")));
    for (String bad : new String[] {"0", "0.0004", "0s"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> deadline.read(env("MPI_BUILD_D", bad)), bad);
      assertTrue(e.getMessage().contains("only off turns the deadline off"), e.getMessage());
    }
  }

  @Test
  void builderOverridesWinAndBlankMeansDefault() {
    Setting<Integer> n = Setting.count("MPI_BUILD_N", "mpibuild.n", 7, 0, 10, "`7`", "test");
    Properties p = new Properties();
    p.setProperty("mpibuild.n", "3");
    SettingSource s = SettingSource.of(p, Map.of("MPI_BUILD_N", "2"));
    assertEquals(3, n.read(s));
    assertEquals(5, n.read(s.with(n, "5")));
    assertEquals(7, n.read(env("MPI_BUILD_N", " ")));
  }

  @Test
  void theRegistryNamesEachVariableOnceAndTheBuilderKnowsThem() {
    Set<String> seen = new HashSet<>();
    for (Setting<?> s : Configuration.all()) {
      assertTrue(seen.add(s.variable()), "declared twice: " + s.variable());
      assertTrue(s.variable().startsWith("MPI_BUILD_"), s.variable());
    }
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> MpiBuild.builder().set("MPI_BUILD_NO_SUCH", "1"));
    assertTrue(e.getMessage().contains("MPI_BUILD_NO_SUCH"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> MpiBuild.builder().set("MPI_BUILD_COMPILE_TIMEOUT", "-1"));
    assertTrue(e.getMessage().contains("MPI_BUILD_COMPILE_TIMEOUT"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> MpiBuild.builder().set("MPI_BUILD_COMPILE_TIMEOUT", "99999999999"));
    assertTrue(e.getMessage().contains("MPI_BUILD_COMPILE_TIMEOUT") && e.getMessage().contains("from 1 ms to 86400"),
        e.getMessage());
    assertEquals(java.time.Duration.ZERO, org.mpibuild.internal.settings.CoreSettings.COLLECTIVE_TIMEOUT.parse("off"));
  }

  @Test
  void sizesParseAndFormat() {
    assertEquals(64L << 20, Setting.parseSize("64m"));
    assertEquals("512 B", Setting.formatSize(512));
    assertEquals("1.5 KiB", Setting.formatSize(1536));
    assertEquals("2.0 GiB", Setting.formatSize(2L << 30));
  }
}
