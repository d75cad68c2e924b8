package org.mpibuild.internal;

import java.util.Locale;
import java.util.Map;
import java.util.Properties;

/**
 * Configuration from system properties and environment variables, checked once. A system property wins
 * over the environment variable of the same meaning; a bad value fails with a message naming the setting.
 *
 * <table>
 *   <caption>Settings</caption>
 *   <tr><th>property</th><th>environment</th><th>default</th></tr>
 *   <tr><td>mpibuild.mode</td><td>MPI_BUILD_MODE</td><td>auto (MPI when launched by mpirun, else local)</td></tr>
 *   <tr><td>mpibuild.backend</td><td>MPI_BUILD_BACKEND</td><td>the only backend on the class path</td></tr>
 *   <tr><td>mpibuild.chunkBytes</td><td>MPI_BUILD_CHUNK_BYTES</td><td>64 MiB</td></tr>
 *   <tr><td>mpibuild.maxBinaryBytes</td><td>MPI_BUILD_MAX_BINARY_BYTES</td><td>16 GiB</td></tr>
 * </table>
 */
public record Settings(Mode mode, String backend, int chunkBytes, long maxBinaryBytes) {

  /** How to find MPI. */
  public enum Mode {
    /** MPI when the process was started by an MPI launcher or the program initialized MPI; else local. */
    AUTO,
    /** Never use MPI: a plain local build. */
    LOCAL,
    /** Require MPI; fail if it cannot be used. */
    MPI
  }

  public static final int DEFAULT_CHUNK_BYTES = 64 << 20;
  public static final long DEFAULT_MAX_BINARY_BYTES = 16L << 30;

  public Settings {
    if (chunkBytes <= 0) {
      throw new IllegalArgumentException("chunk size " + chunkBytes + " must be between 1 and "
          + Integer.MAX_VALUE + " bytes (mpibuild.chunkBytes / MPI_BUILD_CHUNK_BYTES)");
    }
    if (maxBinaryBytes <= 0) {
      throw new IllegalArgumentException("maximum binary size " + maxBinaryBytes
          + " must be positive (mpibuild.maxBinaryBytes / MPI_BUILD_MAX_BINARY_BYTES)");
    }
  }

  /** Reads the settings of this process. */
  public static Settings fromEnvironment() {
    return from(System.getProperties(), System.getenv());
  }

  static Settings from(Properties props, Map<String, String> env) {
    String mode = value(props, env, "mpibuild.mode", "MPI_BUILD_MODE", "auto");
    Mode m;
    try {
      m = Mode.valueOf(mode.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("MPI_BUILD_MODE / mpibuild.mode is '" + mode
          + "'; expected auto, local or mpi", e);
    }
    String backend = value(props, env, "mpibuild.backend", "MPI_BUILD_BACKEND", "");
    long chunk = number(props, env, "mpibuild.chunkBytes", "MPI_BUILD_CHUNK_BYTES", DEFAULT_CHUNK_BYTES);
    if (chunk <= 0 || chunk > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("MPI_BUILD_CHUNK_BYTES / mpibuild.chunkBytes is " + chunk
          + "; expected 1.." + Integer.MAX_VALUE + " (MPI counts are int)");
    }
    long max = number(props, env, "mpibuild.maxBinaryBytes", "MPI_BUILD_MAX_BINARY_BYTES", DEFAULT_MAX_BINARY_BYTES);
    return new Settings(m, backend.isBlank() ? null : backend.trim(), (int) chunk, max);
  }

  /** A copy with another chunk size. */
  public Settings withChunkBytes(int bytes) {
    return new Settings(mode, backend, bytes, maxBinaryBytes);
  }

  /** A copy with another maximum binary size. */
  public Settings withMaxBinaryBytes(long bytes) {
    return new Settings(mode, backend, chunkBytes, bytes);
  }

  /** A copy with another mode. */
  public Settings withMode(Mode m) {
    return new Settings(m, backend, chunkBytes, maxBinaryBytes);
  }

  /** A copy with another backend id. */
  public Settings withBackend(String id) {
    return new Settings(mode, id, chunkBytes, maxBinaryBytes);
  }

  private static String value(Properties props, Map<String, String> env, String prop, String var, String dflt) {
    String v = props.getProperty(prop);
    if (v == null) {
      v = env.get(var);
    }
    return v == null ? dflt : v;
  }

  private static long number(Properties props, Map<String, String> env, String prop, String var, long dflt) {
    String v = value(props, env, prop, var, null);
    if (v == null || v.isBlank()) {
      return dflt;
    }
    try {
      return parseSize(v.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(var + " / " + prop + " is '" + v
          + "'; expected a byte count such as 1048576, 64k, 64m or 2g", e);
    }
  }

  static long parseSize(String v) {
    long unit = 1;
    char last = Character.toLowerCase(v.charAt(v.length() - 1));
    if (last == 'k' || last == 'm' || last == 'g') {
      unit = last == 'k' ? 1L << 10 : last == 'm' ? 1L << 20 : 1L << 30;
      v = v.substring(0, v.length() - 1);
    }
    return Math.multiplyExact(Long.parseLong(v), unit);
  }
}
