package org.mpibuild.internal.settings;

import java.nio.file.Path;
import java.time.Duration;
import org.mpibuild.spi.SettingSource;

/**
 * How the persistent kernel cache behaves. Read from system properties and environment variables.
 *
 * @param access on (read and write), read-only (use entries, never write) or off
 * @param dir the shared cache directory
 * @param maxBytes the size the cache is kept under, evicting the least recently used entries
 * @param shared whether the user declared the directory shared, which allows group-writable directories
 *     and directories owned by someone else
 * @param lockStale how long a lock held from another host may go without a heartbeat before it is
 *     taken over
 * @param lockWait how long a build waits for another holder's compile before compiling without the lock
 * @param negativeTtl how long a failed compile's log is kept to answer the same request; 0 turns it off
 * @param nodeDir an optional node-local cache directory, written by one rank per node; null for none
 * @param signingKey the file holding this user's key that signs entries (created on first use)
 * @param trustedKeys the file, of this user's, listing the other keys whose entries are loaded
 */
public record CacheSettings(Access access, Path dir, long maxBytes, boolean shared, Duration lockStale,
    Duration lockWait, Duration negativeTtl, Path nodeDir, Path signingKey, Path trustedKeys) {

  /** What the cache may do. */
  public enum Access {
    ON, READ_ONLY, OFF
  }

  public static final long DEFAULT_MAX_BYTES = 2L << 30;

  public CacheSettings {
    if (maxBytes <= 0) {
      throw new IllegalArgumentException("cache size limit " + maxBytes
          + " must be positive (MPI_BUILD_CACHE_MAX_BYTES / mpibuild.cache.maxBytes)");
    }
    if (lockStale.isZero()) {
      throw new IllegalArgumentException("stale lock age must be positive (MPI_BUILD_CACHE_LOCK_STALE)");
    }
  }

  /** The signing key's file: MPI_BUILD_SIGNING_KEY, else under $XDG_CONFIG_HOME or ~/.config. */
  static Path signingKey(SettingSource s) {
    Path p = CoreSettings.SIGNING_KEY.read(s);
    return p != null ? p : xdgHome(s, "XDG_CONFIG_HOME", ".config").resolve("mpi-build/signing-key");
  }

  /** An XDG base directory: {@code $VARIABLE} if set, else {@code ~/fallback}; absolute. */
  private static Path xdgHome(SettingSource s, String variable, String fallback) {
    String xdg = s.environment(variable);
    return (xdg != null && !xdg.isBlank() ? Path.of(xdg) : home(s).resolve(fallback)).toAbsolutePath();
  }

  /**
   * The user's home: {@code user.home}, else {@code $HOME} when the JDK found no passwd entry for the uid (a
   * container's {@code --user 54321}: then {@code user.home} is {@code ?}, which would be a relative path).
   */
  private static Path home(SettingSource s) {
    String home = s.property("user.home", "");
    if (home.isBlank() || home.equals("?")) {
      String env = s.environment("HOME");
      home = env != null && !env.isBlank() ? env : home.isBlank() ? "." : home;
    }
    return Path.of(home);
  }

  /** The trust file: MPI_BUILD_TRUSTED_KEYS, else under $XDG_CONFIG_HOME or ~/.config, beside the signing key. */
  static Path trustedKeys(SettingSource s) {
    Path p = CoreSettings.TRUSTED_KEYS.read(s);
    return p != null ? p : xdgHome(s, "XDG_CONFIG_HOME", ".config").resolve("mpi-build/trusted-keys");
  }

  static Path defaultSigningKey() {
    return signingKey(SettingSource.ofProcess());
  }

  static Path defaultTrustedKeys() {
    return trustedKeys(SettingSource.ofProcess());
  }

  /** Whether the cache is used at all (on or read-only). */
  public boolean enabled() {
    return access != Access.OFF;
  }

  /** A cache that is off. */
  public static CacheSettings off() {
    return in(Path.of(".")).toBuilder().access(Access.OFF).build();
  }

  /** A private read-write cache in {@code dir} with the defaults. */
  public static CacheSettings in(Path dir) {
    return new CacheSettings(Access.ON, dir, DEFAULT_MAX_BYTES, false, Duration.ofSeconds(60),
        Duration.ofMinutes(10), Duration.ZERO, null, defaultSigningKey(),
        defaultTrustedKeys());
  }

  /** Reads the settings; a bad value fails, naming the setting. */
  public static CacheSettings from(SettingSource s) {
    Path dir = CoreSettings.CACHE_DIR.read(s);
    if (dir == null) {
      dir = xdgHome(s, "XDG_CACHE_HOME", ".cache").resolve("mpi-build");
    }
    return new CacheSettings(CoreSettings.CACHE.read(s), dir, CoreSettings.CACHE_MAX_BYTES.read(s),
        CoreSettings.CACHE_SHARED.read(s), CoreSettings.CACHE_LOCK_STALE.read(s), CoreSettings.CACHE_LOCK_WAIT.read(s),
        CoreSettings.CACHE_NEGATIVE_TTL.read(s), CoreSettings.NODE_CACHE_DIR.read(s), signingKey(s),
        trustedKeys(s));
  }

  /** A builder holding these settings, to copy them with some values changed. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  /**
   * A copy of a {@link CacheSettings} with some values changed: {@code settings.toBuilder().shared(true).build()}.
   * It checks nothing itself; {@link #build()} goes through the record's constructor.
   */
  public static final class Builder {
    private Access access;
    private Path dir;
    private long maxBytes;
    private boolean shared;
    private Duration lockStale;
    private Duration lockWait;
    private Duration negativeTtl;
    private Path nodeDir;
    private Path signingKey;
    private Path trustedKeys;

    private Builder(CacheSettings s) {
      access = s.access;
      dir = s.dir;
      maxBytes = s.maxBytes;
      shared = s.shared;
      lockStale = s.lockStale;
      lockWait = s.lockWait;
      negativeTtl = s.negativeTtl;
      nodeDir = s.nodeDir;
      signingKey = s.signingKey;
      trustedKeys = s.trustedKeys;
    }

    public Builder access(Access a) {
      access = a;
      return this;
    }

    public Builder dir(Path d) {
      dir = d;
      return this;
    }

    public Builder maxBytes(long b) {
      maxBytes = b;
      return this;
    }

    public Builder shared(boolean s) {
      shared = s;
      return this;
    }

    public Builder lockStale(Duration stale) {
      lockStale = stale;
      return this;
    }

    public Builder lockWait(Duration wait) {
      lockWait = wait;
      return this;
    }

    public Builder negativeTtl(Duration ttl) {
      negativeTtl = ttl;
      return this;
    }

    public Builder nodeDir(Path d) {
      nodeDir = d;
      return this;
    }

    public Builder signingKey(Path key) {
      signingKey = key;
      return this;
    }

    public Builder trustedKeys(Path file) {
      trustedKeys = file;
      return this;
    }

    /** The settings; the record's constructor checks them as it checks any. */
    public CacheSettings build() {
      return new CacheSettings(access, dir, maxBytes, shared, lockStale, lockWait, negativeTtl, nodeDir, signingKey,
          trustedKeys);
    }
  }
}
