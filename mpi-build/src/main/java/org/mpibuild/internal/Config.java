package org.mpibuild.internal;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

/** Reads one setting from a system property or, failing that, an environment variable. */
public final class Config {
  private final Properties props;
  private final Map<String, String> env;

  public Config(Properties props, Map<String, String> env) {
    this.props = props;
    this.env = env;
  }

  /** The settings of this process. */
  public static Config ofProcess() {
    return new Config(System.getProperties(), System.getenv());
  }

  /** The raw value, or {@code dflt} when neither is set. */
  public String string(String property, String variable, String dflt) {
    String v = props.getProperty(property);
    if (v == null) {
      v = env.get(variable);
    }
    return v == null ? dflt : v;
  }

  /** A byte count such as {@code 4096}, {@code 64k}, {@code 16m} or {@code 2g}. */
  public long bytes(String property, String variable, long dflt) {
    String v = string(property, variable, null);
    if (v == null || v.isBlank()) {
      return dflt;
    }
    try {
      return parseSize(v.trim());
    } catch (NumberFormatException | ArithmeticException e) {
      throw new IllegalArgumentException(variable + " / " + property + " is '" + v
          + "'; expected a byte count such as 1048576, 64k, 64m or 2g", e);
    }
  }

  /** A duration in seconds, such as {@code 30} or {@code 0.5}. */
  public Duration seconds(String property, String variable, Duration dflt) {
    String v = string(property, variable, null);
    if (v == null || v.isBlank()) {
      return dflt;
    }
    try {
      double s = Double.parseDouble(v.trim());
      if (s < 0 || Double.isNaN(s) || Double.isInfinite(s)) {
        throw new NumberFormatException("negative or not finite");
      }
      return Duration.ofMillis(Math.round(s * 1000));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(variable + " / " + property + " is '" + v
          + "'; expected a number of seconds (0 or more)", e);
    }
  }

  /** A boolean: true/false, yes/no, on/off, 1/0. */
  public boolean flag(String property, String variable, boolean dflt) {
    String v = string(property, variable, null);
    if (v == null || v.isBlank()) {
      return dflt;
    }
    switch (v.trim().toLowerCase(Locale.ROOT)) {
      case "true": case "yes": case "on": case "1":
        return true;
      case "false": case "no": case "off": case "0":
        return false;
      default:
        throw new IllegalArgumentException(variable + " / " + property + " is '" + v + "'; expected true or false");
    }
  }

  /** The home directory's cache root: $XDG_CACHE_HOME, else ~/.cache. */
  public String userCacheHome() {
    String xdg = env.get("XDG_CACHE_HOME");
    if (xdg != null && !xdg.isBlank()) {
      return xdg;
    }
    return props.getProperty("user.home", ".") + "/.cache";
  }

  /** Parses a byte count with an optional k, m, g or t suffix (powers of 1024). */
  public static long parseSize(String v) {
    long unit = 1;
    char last = Character.toLowerCase(v.charAt(v.length() - 1));
    if (last == 'k' || last == 'm' || last == 'g' || last == 't') {
      unit = last == 'k' ? 1L << 10 : last == 'm' ? 1L << 20 : last == 'g' ? 1L << 30 : 1L << 40;
      v = v.substring(0, v.length() - 1);
    }
    return Math.multiplyExact(Long.parseLong(v.trim()), unit);
  }
}
