package org.mpibuild.internal.settings;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.mpibuild.spi.Setting;
import org.mpibuild.spi.SettingSource;

/**
 * Every core setting, in both its forms (the environment variable and the system property), against empty,
 * blank, zero, negative, huge and malformed values: a blank value is the default; any other value is either
 * accepted within the range {@code docs/configuration.md} documents (never negative, never zero where it says
 * "more than 0") or refused with a message that names the setting's form and the value.
 */
class SettingRangesTest {
  private static final List<String> VALUES = List.of("0", "-1", "-0.5", "99999999999999999999999", "abc", "1x", "NaN",
      "1e400", "0.0000000001");

  private static String documentedRange(Setting<?> s) throws Exception {
    for (String line : Files.readAllLines(Path.of("..", "docs", "configuration.md"))) {
      if (line.startsWith("| `" + s.variable() + "` ")) {
        return line;
      }
    }
    return "";
  }

  @Test
  void everySettingIsTheDefaultWhenBlankAndInItsRangeOrRefusedByNameOtherwise() throws Exception {
    List<String> problems = new ArrayList<>();
    for (Setting<?> s : CoreSettings.ALL) {
      String doc = documentedRange(s);
      boolean positive = doc.contains("more than 0");
      for (String blank : List.of("", "   ")) {
        Object dflt = s.read(SettingSource.of(new Properties(), Map.of()));
        assertEquals(dflt, s.read(SettingSource.of(new Properties(), Map.of(s.variable(), blank))),
            s.variable() + " '" + blank + "' is its default");
      }
      for (String value : VALUES) {
        List<Map.Entry<String, SettingSource>> forms = new ArrayList<>();
        forms.add(Map.entry(s.variable(), SettingSource.of(new Properties(), Map.of(s.variable(), value))));
        if (s.property() != null) {
          Properties props = new Properties();
          props.setProperty(s.property(), value);
          forms.add(Map.entry(s.property(), SettingSource.of(props, Map.of())));
        }
        for (Map.Entry<String, SettingSource> form : forms) {
          Object v;
          try {
            v = s.read(form.getValue());
          } catch (IllegalArgumentException e) {
            String m = String.valueOf(e.getMessage());
            if (!m.contains(form.getKey()) || !m.contains("'" + value + "'")) {
              problems.add(form.getKey() + "='" + value + "' refused without naming both: " + m);
            }
            continue;
          }
          String bad = outOfRange(v, positive);
          if (bad != null) {
            problems.add(form.getKey() + "='" + value + "' accepted as " + v + ": " + bad);
          }
        }
      }
    }
    if (!problems.isEmpty()) {
      fail(String.join("\n", problems));
    }
  }

  /** Why {@code v} is outside a documented range, or null. */
  private static String outOfRange(Object v, boolean positive) {
    if (v instanceof Duration d) {
      return d.isNegative() ? "negative" : positive && d.isZero() ? "documented as more than 0" : null;
    }
    if (v instanceof Number n) {
      return n.doubleValue() < 0 ? "negative" : positive && n.doubleValue() == 0 ? "documented as more than 0" : null;
    }
    return null;
  }

  @Test
  void theCheckCanFail() {
    assertTrue(outOfRange(Duration.ofSeconds(-1), false) != null);
    assertTrue(outOfRange(Duration.ZERO, true) != null);
    assertTrue(outOfRange(-1L, false) != null);
    assertFalse(outOfRange(Duration.ZERO, false) != null);
  }
}
