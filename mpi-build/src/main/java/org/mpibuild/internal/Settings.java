package org.mpibuild.internal;

import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import org.mpibuild.internal.cache.CacheSettings;

/**
 * Configuration from system properties and environment variables, checked once. A system property wins
 * over the environment variable of the same meaning; a bad value fails with a message naming the setting.
 * The README's configuration table lists every setting.
 *
 * @param mode how to find MPI
 * @param backend the backend id, or null for the only one on the class path
 * @param chunkBytes the broadcast chunk size
 * @param maxBinaryBytes the largest binary a rank accepts
 * @param cache the persistent cache
 * @param compileTimeout how long the root's compile may take before every rank fails with a timeout
 * @param batchRanks how many ranks compile the misses of a batch build; 0 means every rank
 * @param progress who drives the MPI calls of asynchronous builds
 * @param record the manifest file the root appends every build request to, or null
 */
public record Settings(Mode mode, String backend, int chunkBytes, long maxBinaryBytes, CacheSettings cache,
    java.time.Duration compileTimeout, int batchRanks, Progress progress, java.nio.file.Path record) {

  /** Who makes the MPI calls of asynchronous builds. */
  public enum Progress {
    /** A library thread under MPI_THREAD_MULTIPLE, else the caller. */
    AUTO,
    /** A library thread; needs MPI_THREAD_MULTIPLE. */
    THREAD,
    /** The caller's thread, when it touches a future or calls progress(). */
    CALLER
  }

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
  public static final java.time.Duration DEFAULT_COMPILE_TIMEOUT = java.time.Duration.ofMinutes(10);

  public Settings {
    if (chunkBytes <= 0) {
      throw new IllegalArgumentException("chunk size " + chunkBytes + " must be between 1 and "
          + Integer.MAX_VALUE + " bytes (mpibuild.chunkBytes / MPI_BUILD_CHUNK_BYTES)");
    }
    if (compileTimeout.isZero() || compileTimeout.isNegative()) {
      throw new IllegalArgumentException("compile timeout " + compileTimeout
          + " must be positive (mpibuild.compileTimeoutSeconds / MPI_BUILD_COMPILE_TIMEOUT)");
    }
    if (maxBinaryBytes <= 0) {
      throw new IllegalArgumentException("maximum binary size " + maxBinaryBytes
          + " must be positive (mpibuild.maxBinaryBytes / MPI_BUILD_MAX_BINARY_BYTES)");
    }
    if (batchRanks < 0) {
      throw new IllegalArgumentException("batch compile ranks " + batchRanks
          + " must be 0 (every rank) or more (mpibuild.batchRanks / MPI_BUILD_BATCH_RANKS)");
    }
  }

  /** Settings with the defaults and no cache, for tests. */
  public static Settings defaults() {
    return new Settings(Mode.AUTO, null, DEFAULT_CHUNK_BYTES, DEFAULT_MAX_BINARY_BYTES, CacheSettings.off(),
        DEFAULT_COMPILE_TIMEOUT, 0, Progress.AUTO, null);
  }

  /** Reads the settings of this process. */
  public static Settings fromEnvironment() {
    return from(Config.ofProcess());
  }

  static Settings from(Properties props, Map<String, String> env) {
    return from(new Config(props, env));
  }

  static Settings from(Config c) {
    Mode m = choice(c, "mpibuild.mode", "MPI_BUILD_MODE", Mode.class);
    String backend = c.string("mpibuild.backend", "MPI_BUILD_BACKEND", "");
    long chunk = c.bytes("mpibuild.chunkBytes", "MPI_BUILD_CHUNK_BYTES", DEFAULT_CHUNK_BYTES);
    if (chunk <= 0 || chunk > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("MPI_BUILD_CHUNK_BYTES / mpibuild.chunkBytes is " + chunk
          + "; expected 1.." + Integer.MAX_VALUE + " (MPI counts are int)");
    }
    long max = c.bytes("mpibuild.maxBinaryBytes", "MPI_BUILD_MAX_BINARY_BYTES", DEFAULT_MAX_BINARY_BYTES);
    String ranks = c.string("mpibuild.batchRanks", "MPI_BUILD_BATCH_RANKS", "0").trim();
    int batchRanks;
    try {
      batchRanks = Integer.parseInt(ranks);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("MPI_BUILD_BATCH_RANKS / mpibuild.batchRanks is '" + ranks
          + "'; expected a whole number (0 = every rank)", e);
    }
    Progress p = choice(c, "mpibuild.progress", "MPI_BUILD_PROGRESS", Progress.class);
    String record = c.string("mpibuild.record", "MPI_BUILD_RECORD", "").trim();
    return new Settings(m, backend.isBlank() ? null : backend.trim(), (int) chunk, max, CacheSettings.from(c),
        c.seconds("mpibuild.compileTimeoutSeconds", "MPI_BUILD_COMPILE_TIMEOUT", DEFAULT_COMPILE_TIMEOUT),
        batchRanks, p, record.isEmpty() ? null : java.nio.file.Path.of(record).toAbsolutePath());
  }

  /** One of an enum's constants, by name in any case; the first constant is the default. */
  private static <E extends Enum<E>> E choice(Config c, String property, String variable, Class<E> type) {
    E[] all = type.getEnumConstants();
    String v = c.string(property, variable, all[0].name().toLowerCase(Locale.ROOT));
    try {
      return Enum.valueOf(type, v.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      StringBuilder expected = new StringBuilder();
      for (E x : all) {
        expected.append(expected.length() == 0 ? "" : ", ").append(x.name().toLowerCase(Locale.ROOT));
      }
      throw new IllegalArgumentException(variable + " / " + property + " is '" + v + "'; expected " + expected, e);
    }
  }

  public Settings withChunkBytes(int bytes) {
    return new Settings(mode, backend, bytes, maxBinaryBytes, cache, compileTimeout, batchRanks, progress, record);
  }

  public Settings withMaxBinaryBytes(long bytes) {
    return new Settings(mode, backend, chunkBytes, bytes, cache, compileTimeout, batchRanks, progress, record);
  }

  public Settings withMode(Mode m) {
    return new Settings(m, backend, chunkBytes, maxBinaryBytes, cache, compileTimeout, batchRanks, progress, record);
  }

  public Settings withBackend(String id) {
    return new Settings(mode, id, chunkBytes, maxBinaryBytes, cache, compileTimeout, batchRanks, progress, record);
  }

  public Settings withCache(CacheSettings c) {
    return new Settings(mode, backend, chunkBytes, maxBinaryBytes, c, compileTimeout, batchRanks, progress, record);
  }

  public Settings withCompileTimeout(java.time.Duration t) {
    return new Settings(mode, backend, chunkBytes, maxBinaryBytes, cache, t, batchRanks, progress, record);
  }

  public Settings withBatchRanks(int ranks) {
    return new Settings(mode, backend, chunkBytes, maxBinaryBytes, cache, compileTimeout, ranks, progress, record);
  }

  public Settings withProgress(Progress p) {
    return new Settings(mode, backend, chunkBytes, maxBinaryBytes, cache, compileTimeout, batchRanks, p, record);
  }

  public Settings withRecord(java.nio.file.Path file) {
    return new Settings(mode, backend, chunkBytes, maxBinaryBytes, cache, compileTimeout, batchRanks, progress, file);
  }
}
