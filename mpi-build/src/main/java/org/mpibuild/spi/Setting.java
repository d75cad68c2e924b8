package org.mpibuild.spi;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One setting of mpi-build, declared once: its environment variable, its system property, its default,
 * its parser and what it means. The core declares its own; backends and MPI bindings declare theirs through
 * {@link BackendProvider#settings()} and {@link MpiBinding#settings()}. {@link org.mpibuild.Configuration#all()}
 * lists them for {@code mpi-build doctor} and for the README's configuration table, which a test keeps in step.
 *
 * <p>A value set on the builder wins over the system property, which wins over the environment variable. A
 * bad value fails when it is read, with a message naming the setting, the value and what is expected.
 *
 * @param <T> the type of the value
 */
public final class Setting<T> {
  private final String variable;
  private final String property;
  private final T dflt;
  private final String defaultText;
  private final String description;
  private final String expected;
  private final Function<String, T> parser;

  private Setting(String variable, String property, T dflt, String defaultText, String expected,
      String description, Function<String, T> parser) {
    this.variable = Objects.requireNonNull(variable);
    this.property = property;
    this.dflt = dflt;
    this.defaultText = defaultText;
    this.expected = expected;
    this.description = description;
    this.parser = parser;
  }

  /**
   * Declares a setting of free text; blank means the default.
   *
   * @param variable the environment variable
   * @param property the system property, or null for none
   * @param dflt the default value, or null
   * @param defaultText the default as the README says it
   * @param description what the setting means
   * @return the setting
   */
  public static Setting<String> text(String variable, String property, String dflt, String defaultText,
      String description) {
    return new Setting<>(variable, property, dflt, defaultText, "text", description, String::trim);
  }

  /**
   * Declares a file or directory setting, made absolute.
   *
   * @param variable the environment variable
   * @param property the system property
   * @param defaultText the default as the README says it (the value itself is null: computed by the reader)
   * @param description what the setting means
   * @return the setting
   */
  public static Setting<Path> path(String variable, String property, String defaultText, String description) {
    return new Setting<>(variable, property, null, defaultText, "a path", description,
        v -> Path.of(v.trim()).toAbsolutePath());
  }

  /**
   * Declares a whole number in {@code [min, max]}.
   *
   * @param variable the environment variable
   * @param property the system property
   * @param dflt the default
   * @param min the least value accepted
   * @param max the greatest value accepted
   * @param defaultText the default as the README says it
   * @param description what the setting means
   * @return the setting
   */
  public static Setting<Integer> count(String variable, String property, int dflt, int min, int max,
      String defaultText, String description) {
    return new Setting<>(variable, property, dflt, defaultText, "a whole number from " + min + " to " + max,
        description, v -> (int) inRange(Long.parseLong(v.trim()), min, max));
  }

  /**
   * Declares a byte count such as {@code 4096}, {@code 64k}, {@code 16m} or {@code 2g}, in {@code [min, max]}.
   *
   * @param variable the environment variable
   * @param property the system property
   * @param dflt the default
   * @param min the least value accepted
   * @param max the greatest value accepted
   * @param defaultText the default as the README says it
   * @param description what the setting means
   * @return the setting
   */
  public static Setting<Long> bytes(String variable, String property, long dflt, long min, long max,
      String defaultText, String description) {
    return new Setting<>(variable, property, dflt, defaultText, "a byte count from " + min + " to " + max
        + " (suffixes k, m, g, t)", description, v -> inRange(parseSize(v.trim()), min, max));
  }

  /** The one grammar of durations, in settings and on the command line: a number, then s, m, h or d. */
  private static final Pattern DURATION =
      Pattern.compile("(\\d{1,18}(?:\\.\\d{1,9})?)\\s*([smhdSMHD]?)");

  /**
   * Reads a duration in the grammar of every duration mpi-build takes, in settings and on the command line:
   * a decimal number followed by {@code s}, {@code m}, {@code h} or {@code d}, or by nothing for seconds
   * ({@code 30s}, {@code 1.5h}, {@code 2d}, {@code 600}). Nothing else is a duration: not {@code 1d5},
   * not {@code 1e3}, not Java's {@code 1f}.
   *
   * @param text the duration
   * @return the duration, to the millisecond
   * @throws IllegalArgumentException naming the text, if it is not a duration
   */
  public static Duration parseDuration(String text) {
    Matcher m = DURATION.matcher(text == null ? "" : text.trim());
    if (!m.matches()) {
      throw new IllegalArgumentException("'" + text + "' is not a duration such as 30s, 5m, 1h, 2d or plain seconds");
    }
    long unitMillis = switch (m.group(2).toLowerCase(Locale.ROOT)) {
      case "m" -> 60_000L;
      case "h" -> 3_600_000L;
      case "d" -> 86_400_000L;
      default -> 1_000L;
    };
    BigDecimal millis = new BigDecimal(m.group(1)).multiply(BigDecimal.valueOf(unitMillis));
    if (millis.compareTo(BigDecimal.valueOf(Long.MAX_VALUE / 2)) > 0) {
      throw new IllegalArgumentException(OUT_OF_RANGE + text.trim());
    }
    return Duration.ofMillis(millis.setScale(0, RoundingMode.HALF_UP).longValueExact());
  }

  /**
   * Declares a duration ({@link #parseDuration}: {@code 30s}, {@code 5m}, {@code 1h}, {@code 2d} or plain
   * seconds), in {@code [0, max]}.
   *
   * @param variable the environment variable
   * @param property the system property
   * @param dflt the default
   * @param max the longest duration accepted
   * @param defaultText the default as the README says it
   * @param description what the setting means
   * @return the setting
   */
  public static Setting<Duration> seconds(String variable, String property, Duration dflt, Duration max,
      String defaultText, String description) {
    return seconds(variable, property, dflt, Duration.ZERO, max, defaultText, description);
  }

  /**
   * Declares a duration ({@link #parseDuration}) in {@code [min, max]}; a {@code min} of 1 ms or more refuses
   * {@code 0}, and every value that rounds to less than {@code min}.
   *
   * @param variable the environment variable
   * @param property the system property
   * @param dflt the default
   * @param min the shortest duration accepted
   * @param max the longest duration accepted
   * @param defaultText the default as the README says it
   * @param description what the setting means
   * @return the setting
   */
  public static Setting<Duration> seconds(String variable, String property, Duration dflt, Duration min, Duration max,
      String defaultText, String description) {
    String from = min.isZero() ? "0" : min.toMillis() < 1000 ? min.toMillis() + " ms" : min.toSeconds() + " s";
    return new Setting<>(variable, property, dflt, defaultText, "a duration (30s, 5m, 1h, 2d, or plain seconds) "
        + "from " + from + " to " + max.toSeconds() + " s", description, v -> {
          Duration d = parseDuration(v);
          if (d.compareTo(max) > 0 || d.compareTo(min) < 0) {
            throw new IllegalArgumentException(OUT_OF_RANGE + v.trim());
          }
          return d;
        });
  }

  /**
   * Declares a deadline: a duration ({@link #parseDuration}) of at least 1 ms and at most {@code max}, or
   * {@code off}, no deadline, read as {@link Duration#ZERO}. Only {@code off} turns it off: {@code 0}, or a
   * value that rounds to 0 ms, is refused.
   *
   * @param variable the environment variable
   * @param property the system property
   * @param dflt the default
   * @param max the longest deadline accepted
   * @param defaultText the default as the README says it
   * @param description what the setting means
   * @return the setting
   */
  public static Setting<Duration> deadline(String variable, String property, Duration dflt, Duration max,
      String defaultText, String description) {
    Setting<Duration> seconds = seconds(variable, property, dflt, max, defaultText, description);
    return new Setting<>(variable, property, dflt, defaultText, "a duration (30s, 5m, 1h, 2d, or plain seconds) "
        + "from 1 ms to " + max.toSeconds() + " s, or off", description, v -> {
          if (v.trim().equalsIgnoreCase("off")) {
            return Duration.ZERO;
          }
          Duration d = seconds.parser.apply(v);
          if (d.isZero()) {
            throw new IllegalArgumentException(OUT_OF_RANGE + v.trim() + " (only off turns the deadline off)");
          }
          return d;
        });
  }

  /**
   * Declares a boolean: true/false, yes/no, on/off, 1/0.
   *
   * @param variable the environment variable
   * @param property the system property
   * @param dflt the default
   * @param description what the setting means
   * @return the setting
   */
  public static Setting<Boolean> flag(String variable, String property, boolean dflt, String description) {
    return new Setting<>(variable, property, dflt, "`" + dflt + "`", "true or false", description, v -> {
      switch (v.trim().toLowerCase(Locale.ROOT)) {
        case "true": case "yes": case "on": case "1":
          return true;
        case "false": case "no": case "off": case "0":
          return false;
        default:
          throw new IllegalArgumentException();
      }
    });
  }

  /**
   * Declares one of an enum's constants, named in any case with {@code -} or {@code _}; aliases map other
   * words to constants.
   *
   * @param <E> the enum
   * @param variable the environment variable
   * @param property the system property
   * @param type the enum's class
   * @param dflt the default
   * @param description what the setting means
   * @return the setting
   */
  public static <E extends Enum<E>> Setting<E> choice(String variable, String property, Class<E> type, E dflt,
      String description) {
    return choice(variable, property, type, dflt, Map.of(), description);
  }

  /**
   * Declares one of an enum's constants, as {@link #choice(String, String, Class, Enum, String)} does, with
   * other words accepted for some constants.
   *
   * @param <E> the enum
   * @param variable the environment variable
   * @param property the system property
   * @param type the enum's class
   * @param dflt the default
   * @param aliases other words (lower case) and the constants they mean
   * @param description what the setting means
   * @return the setting
   */
  public static <E extends Enum<E>> Setting<E> choice(String variable, String property, Class<E> type, E dflt,
      Map<String, E> aliases, String description) {
    List<String> names = new ArrayList<>();
    for (E e : type.getEnumConstants()) {
      names.add(name(e));
    }
    return new Setting<>(variable, property, dflt, "`" + name(dflt) + "`", "one of " + String.join(", ", names), description,
        v -> {
          E alias = aliases.get(v.trim().toLowerCase(Locale.ROOT));
          return alias != null ? alias : Enum.valueOf(type, v.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
        });
  }

  /**
   * Returns an enum constant as settings spell it: lower case, {@code -} for {@code _}.
   *
   * @param e the constant
   * @return its name in settings
   */
  public static String name(Enum<?> e) {
    return e.name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  /**
   * Reads the setting.
   *
   * @param source where settings come from
   * @return the value, or the default when it is unset or blank
   * @throws IllegalArgumentException naming the setting, the value and what is expected, if it is bad
   */
  public T read(SettingSource source) {
    String v = source.raw(this);
    if (v == null || v.isBlank()) {
      return dflt;
    }
    return parse(v);
  }

  /**
   * Parses a value of this setting.
   *
   * @param value the text
   * @return the value
   * @throws IllegalArgumentException naming the setting, the value and what is expected, if it is bad
   */
  public T parse(String value) {
    try {
      return parser.apply(value);
    } catch (RuntimeException e) {
      String detail = e.getMessage() != null && e.getMessage().startsWith(OUT_OF_RANGE) ? " (" + e.getMessage() + ")" : "";
      throw new IllegalArgumentException(names() + " is '" + value + "'" + detail + "; expected " + expected, e);
    }
  }

  /** @return the environment variable, for example {@code MPI_BUILD_CHUNK_BYTES} */
  public String variable() {
    return variable;
  }

  /** @return the system property, for example {@code mpibuild.chunkBytes}; null when there is none */
  public String property() {
    return property;
  }

  /** @return the default, as the README states it */
  public String defaultText() {
    return defaultText;
  }

  /** @return what the setting means */
  public String description() {
    return description;
  }

  /** @return the variable and the property, as messages name the setting */
  public String names() {
    return property == null ? variable : variable + " / " + property;
  }

  @Override
  public String toString() {
    return variable;
  }

  /**
   * Parses a byte count such as {@code 4096}, {@code 64k}, {@code 16m} or {@code 2g} (powers of 1024).
   *
   * @param v the text
   * @return the count
   * @throws NumberFormatException if it is not a count
   * @throws ArithmeticException if it overflows a long
   */
  public static long parseSize(String v) {
    long unit = 1;
    char last = Character.toLowerCase(v.charAt(v.length() - 1));
    if (last == 'k' || last == 'm' || last == 'g' || last == 't') {
      unit = last == 'k' ? 1L << 10 : last == 'm' ? 1L << 20 : last == 'g' ? 1L << 30 : 1L << 40;
      v = v.substring(0, v.length() - 1);
    }
    return Math.multiplyExact(Long.parseLong(v.trim()), unit);
  }

  /**
   * Formats a byte count for people: {@code 512 B}, {@code 48.0 KiB}, {@code 1.5 GiB}.
   *
   * @param bytes the count
   * @return the text
   */
  public static String formatSize(long bytes) {
    if (bytes < 1024) {
      return bytes + " B";
    }
    String[] units = {"KiB", "MiB", "GiB", "TiB"};
    double v = bytes;
    int u = -1;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
  }

  private static final String OUT_OF_RANGE = "out of range: ";

  private static long inRange(long v, long min, long max) {
    if (v < min || v > max) {
      throw new IllegalArgumentException(OUT_OF_RANGE + v);
    }
    return v;
  }
}
