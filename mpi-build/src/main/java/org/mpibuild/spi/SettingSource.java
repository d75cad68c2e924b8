package org.mpibuild.spi;

import java.util.Map;
import java.util.Properties;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Where settings come from: values set on the builder first, then system properties, then environment
 * variables. Immutable; {@link #with} returns a new source.
 */
public final class SettingSource {
  private final Map<String, String> overrides;
  private final Properties props;
  private final Map<String, String> env;

  private SettingSource(Map<String, String> overrides, Properties props, Map<String, String> env) {
    this.overrides = overrides;
    this.props = props;
    this.env = env;
  }

  /**
   * Returns the settings of this process: its system properties and environment.
   *
   * @return the source
   */
  public static SettingSource ofProcess() {
    return new SettingSource(Map.of(), System.getProperties(), System.getenv());
  }

  /**
   * Returns a source over the given properties and environment, for tests and tools.
   *
   * @param props system properties
   * @param env environment variables
   * @return the source
   */
  public static SettingSource of(Properties props, Map<String, String> env) {
    return new SettingSource(Map.of(), props, env);
  }

  /**
   * Returns this source with {@code setting} set to {@code value}, which wins over property and variable.
   *
   * @param setting the setting
   * @param value its text, as the environment variable would hold it
   * @return a new source
   */
  public SettingSource with(Setting<?> setting, String value) {
    Map<String, String> m = new TreeMap<>(overrides);
    m.put(setting.variable(), value);
    return new SettingSource(Map.copyOf(m), props, env);
  }

  /**
   * Returns the raw text of a setting: set on the builder, else the system property, else the variable.
   *
   * @param setting the setting
   * @return the text, or null when none is set
   */
  public String raw(Setting<?> setting) {
    String v = overrides.get(setting.variable());
    if (v == null && setting.property() != null) {
      v = props.getProperty(setting.property());
    }
    return v != null ? v : env.get(setting.variable());
  }

  /**
   * Returns an environment variable that is not a setting of the library (PATH, HOME, XDG_CACHE_HOME).
   *
   * @param name the variable
   * @return its value, or null
   */
  public String environment(String name) {
    return env.get(name);
  }

  /**
   * Returns the names of the environment variables that start with {@code variablePrefix} and of the
   * system properties that start with {@code propertyPrefix}, so that names that are no setting can be
   * found (a misspelt {@code MPI_BUILD_*} variable is otherwise ignored without a word).
   *
   * @param variablePrefix for example {@code "MPI_BUILD_"}
   * @param propertyPrefix for example {@code "mpibuild."}
   * @return the names, sorted
   */
  public SortedSet<String> namesLike(String variablePrefix, String propertyPrefix) {
    SortedSet<String> out = new TreeSet<>();
    for (String v : env.keySet()) {
      if (v.startsWith(variablePrefix)) {
        out.add(v);
      }
    }
    for (String p : props.stringPropertyNames()) {
      if (p.startsWith(propertyPrefix)) {
        out.add(p);
      }
    }
    return out;
  }

  /**
   * Returns a system property.
   *
   * @param name the property
   * @param dflt what to return when it is unset
   * @return its value, or {@code dflt}
   */
  public String property(String name, String dflt) {
    return props.getProperty(name, dflt);
  }
}
