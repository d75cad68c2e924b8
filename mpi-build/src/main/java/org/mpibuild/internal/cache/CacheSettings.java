package org.mpibuild.internal.cache;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import org.mpibuild.internal.Config;

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
 */
public record CacheSettings(Access access, Path dir, long maxBytes, boolean shared, Duration lockStale,
    Duration lockWait, Duration negativeTtl, Path nodeDir) {

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

  /** A cache that is off. */
  public static CacheSettings off() {
    return new CacheSettings(Access.OFF, Path.of("."), DEFAULT_MAX_BYTES, false, Duration.ofSeconds(60),
        Duration.ofMinutes(10), Duration.ZERO, null);
  }

  /** A private read-write cache in {@code dir} with the defaults. */
  public static CacheSettings in(Path dir) {
    return new CacheSettings(Access.ON, dir, DEFAULT_MAX_BYTES, false, Duration.ofSeconds(60),
        Duration.ofMinutes(10), Duration.ZERO, null);
  }

  /** Reads the settings. */
  public static CacheSettings from(Config c) {
    String mode = c.string("mpibuild.cache", "MPI_BUILD_CACHE", "on").trim().toLowerCase(Locale.ROOT);
    Access access;
    switch (mode) {
      case "on": case "true": case "1": case "read-write":
        access = Access.ON;
        break;
      case "off": case "false": case "0": case "none":
        access = Access.OFF;
        break;
      case "read-only": case "readonly": case "ro":
        access = Access.READ_ONLY;
        break;
      default:
        throw new IllegalArgumentException("MPI_BUILD_CACHE / mpibuild.cache is '" + mode
            + "'; expected on, off or read-only");
    }
    String dir = c.string("mpibuild.cache.dir", "MPI_BUILD_CACHE_DIR", "");
    Path path = dir.isBlank() ? Path.of(c.userCacheHome(), "mpi-build") : Path.of(dir);
    String node = c.string("mpibuild.cache.nodeDir", "MPI_BUILD_NODE_CACHE_DIR", "");
    return new CacheSettings(access, path.toAbsolutePath(),
        c.bytes("mpibuild.cache.maxBytes", "MPI_BUILD_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES),
        c.flag("mpibuild.cache.shared", "MPI_BUILD_CACHE_SHARED", false),
        c.seconds("mpibuild.cache.lockStaleSeconds", "MPI_BUILD_CACHE_LOCK_STALE", Duration.ofSeconds(60)),
        c.seconds("mpibuild.cache.lockWaitSeconds", "MPI_BUILD_CACHE_LOCK_WAIT", Duration.ofMinutes(10)),
        c.seconds("mpibuild.cache.negativeTtlSeconds", "MPI_BUILD_CACHE_NEGATIVE_TTL", Duration.ZERO),
        node.isBlank() ? null : Path.of(node).toAbsolutePath());
  }

  public CacheSettings withAccess(Access a) {
    return new CacheSettings(a, dir, maxBytes, shared, lockStale, lockWait, negativeTtl, nodeDir);
  }

  public CacheSettings withDir(Path d) {
    return new CacheSettings(access, d, maxBytes, shared, lockStale, lockWait, negativeTtl, nodeDir);
  }

  public CacheSettings withMaxBytes(long b) {
    return new CacheSettings(access, dir, b, shared, lockStale, lockWait, negativeTtl, nodeDir);
  }

  public CacheSettings withShared(boolean s) {
    return new CacheSettings(access, dir, maxBytes, s, lockStale, lockWait, negativeTtl, nodeDir);
  }

  public CacheSettings withLocks(Duration stale, Duration wait) {
    return new CacheSettings(access, dir, maxBytes, shared, stale, wait, negativeTtl, nodeDir);
  }

  public CacheSettings withNegativeTtl(Duration ttl) {
    return new CacheSettings(access, dir, maxBytes, shared, lockStale, lockWait, ttl, nodeDir);
  }

  public CacheSettings withNodeDir(Path d) {
    return new CacheSettings(access, dir, maxBytes, shared, lockStale, lockWait, negativeTtl, d);
  }
}
