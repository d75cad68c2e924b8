package org.mpibuild.internal.settings;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import org.mpibuild.spi.SettingSource;

/**
 * Settings for the core's tests: the defaults with no cache, read from a map, or copied with one value
 * changed. Only tests need these; the library reads its settings from the process ({@link Settings#from}).
 */
public final class TestSettings {
  private TestSettings() {}

  /** The defaults, with no cache. */
  public static Settings defaults() {
    return new Settings(Settings.Mode.AUTO, Settings.Binding.AUTO, SettingSource.of(new Properties(), Map.of()), null,
        Settings.DEFAULT_CHUNK_BYTES, Settings.DEFAULT_MAX_BINARY_BYTES, CacheSettings.off(),
        Settings.DEFAULT_COMPILE_TIMEOUT, 0, Settings.Progress.AUTO, null, Settings.DEFAULT_COLLECTIVE_TIMEOUT);
  }

  /** Local mode with the defaults, no cache, the given chunk size and binary limit. */
  public static Settings local(int chunkBytes, long maxBinaryBytes) {
    Settings d = defaults();
    return new Settings(Settings.Mode.LOCAL, d.binding(), d.source(), d.backend(), chunkBytes, maxBinaryBytes,
        d.cache(), d.compileTimeout(), d.batchRanks(), d.progress(), d.record(), d.collectiveTimeout());
  }

  /** Reads the settings from these properties and environment. */
  public static Settings from(Properties props, Map<String, String> env) {
    return Settings.from(SettingSource.of(props, env));
  }

  /** {@code s} with another chunk size. */
  public static Settings withChunkBytes(Settings s, int bytes) {
    return new Settings(s.mode(), s.binding(), s.source(), s.backend(), bytes, s.maxBinaryBytes(), s.cache(),
        s.compileTimeout(), s.batchRanks(), s.progress(), s.record(), s.collectiveTimeout());
  }

  /** {@code s} with another limit on binaries. */
  public static Settings withMaxBinaryBytes(Settings s, long bytes) {
    return new Settings(s.mode(), s.binding(), s.source(), s.backend(), s.chunkBytes(), bytes, s.cache(),
        s.compileTimeout(), s.batchRanks(), s.progress(), s.record(), s.collectiveTimeout());
  }

  /** {@code s} with another cache. */
  public static Settings withCache(Settings s, CacheSettings cache) {
    return new Settings(s.mode(), s.binding(), s.source(), s.backend(), s.chunkBytes(), s.maxBinaryBytes(), cache,
        s.compileTimeout(), s.batchRanks(), s.progress(), s.record(), s.collectiveTimeout());
  }

  /** {@code s} with another compile timeout. */
  public static Settings withCompileTimeout(Settings s, Duration timeout) {
    return new Settings(s.mode(), s.binding(), s.source(), s.backend(), s.chunkBytes(), s.maxBinaryBytes(), s.cache(),
        timeout, s.batchRanks(), s.progress(), s.record(), s.collectiveTimeout());
  }
}
