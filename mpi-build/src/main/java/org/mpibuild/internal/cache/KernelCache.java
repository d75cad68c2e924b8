package org.mpibuild.internal.cache;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.mpibuild.CorruptBinaryException;
import org.mpibuild.internal.settings.CacheSettings;
import org.mpibuild.internal.wire.Envelope;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The persistent kernel cache: one directory ({@link CacheDirectory}), one file per kernel, a lock per
 * compile ({@link CompileLocks}), maintenance ({@link CacheMaintenance}).
 *
 * <p>The entry format is {@link EntryCodec}'s: a 48-byte entry header, then the envelope, which carries its
 * own magic, version, lengths, SHA-256 of the binary and metadata checksum; a reader checks all of them.
 *
 * <p>Entries are written to a temporary file in {@code entries/}, forced to disk, renamed into place
 * atomically, and the directory is forced too: a reader sees no entry or a whole one. Every file system
 * call is counted ({@link #fileOperations()}), so tests can check that the count per kernel does not grow
 * with the number of ranks.
 */
public final class KernelCache {
  private static final Logger log = LoggerFactory.getLogger(KernelCache.class);

  /** A cache entry as found on disk. */
  public record Entry(String key, Envelope envelope, Path file, long bytes, Instant lastUse) {}

  /** An entry as listed, without reading its binary. */
  public record Listing(String key, Path file, long bytes, Instant lastUse, String backend, String target,
      List<String> kernelNames, String status, String problem) {}

  private final CacheDirectory d;
  private final CompileLocks locks;
  private final CacheMaintenance maintenance;

  private KernelCache(CacheDirectory d) {
    this.d = d;
    this.locks = new CompileLocks(d);
    this.maintenance = new CacheMaintenance(d);
  }

  /** Opens the cache in {@code settings.dir()}; null when it is off or cannot be used (see {@link CacheDirectory}). */
  public static KernelCache open(CacheSettings settings) {
    return open(settings, settings.dir());
  }

  /** Opens the cache in {@code dir} with {@code settings} (used for the node-local cache). */
  public static KernelCache open(CacheSettings settings, Path dir) {
    CacheDirectory d = CacheDirectory.open(settings, dir);
    return d == null ? null : new KernelCache(d);
  }

  /**
   * Opens an existing, tagged cache for maintenance, creating nothing; see
   * {@link CacheDirectory#openForAdmin}.
   *
   * @throws IllegalStateException saying why it cannot be used
   */
  public static KernelCache openForAdmin(CacheSettings settings, Path dir, boolean write) {
    return new KernelCache(CacheDirectory.openForAdmin(settings, dir, write));
  }

  /** Why writing is refused, or null if it is allowed or not wanted. */
  public String writeRefusal() {
    return d.writeRefusal;
  }

  /** Whether this cache writes entries. */
  public boolean writable() {
    return d.writable;
  }

  /** The cache directory. */
  public Path dir() {
    return d.dir;
  }

  /** The settings it was opened with. */
  public CacheSettings settings() {
    return d.settings;
  }

  /** How many entries were refused because no trusted key signed them. */
  public long untrustedEntries() {
    return d.untrusted.get();
  }

  /** Nanoseconds spent deciding whether entries are trusted (key file, seal or signature). */
  public long trustCheckNanos() {
    return d.trustCheckNanos.get();
  }

  /** How many file system calls this object has made. */
  public long fileOperations() {
    return d.fileOperations();
  }

  /**
   * Returns the entry for {@code key}, or null on a miss. A corrupt or truncated entry, or one that does
   * not match the key, is reported, moved aside and treated as a miss. An expired negative entry is a
   * miss. A hit refreshes the entry's last use (unless read-only).
   */
  public Entry lookup(String key) {
    return lookup(key, Long.MAX_VALUE);
  }

  /** {@link #lookup(String)}, refusing (as corrupt) an entry whose binary exceeds {@code maxBinaryBytes}. */
  public Entry lookup(String key, long maxBinaryBytes) {
    Path file = d.entryFile(key);
    byte[] bytes;
    Envelope envelope;
    try {
      d.op();
      bytes = EntryCodec.read(file, maxBinaryBytes);
      envelope = EntryCodec.decode(key, bytes, null);
      long t0 = System.nanoTime(); // what trusting costs a warm start: the key file on first use, then the seal
      try {
        EntryCodec.verify(bytes, d.signing());
      } finally {
        d.trustCheckNanos.addAndGet(System.nanoTime() - t0);
      }
    } catch (NoSuchFileException e) {
      return null;
    } catch (IOException e) {
      log.warn("cannot read cache entry {}: {}", file, e.toString());
      return null;
    } catch (EntrySigning.UntrustedEntryException e) {
      d.untrusted.incrementAndGet();
      log.warn("cache entry {} is not loaded: {}; moving it aside and rebuilding", file, e.getMessage());
      d.quarantine(file, key);
      return null;
    } catch (CorruptBinaryException e) {
      log.warn("cache entry {} is corrupt ({}); moving it aside and rebuilding", file, e.getMessage());
      d.quarantine(file, key);
      return null;
    } catch (IllegalStateException e) {
      log.warn("cache entry {} is not read: {}", file, e.getMessage());
      return null;
    }
    d.op();
    Instant lastUse = CacheDirectory.mtime(file);
    if (envelope.status() != Envelope.Status.OK) {
      Duration ttl = d.settings.negativeTtl();
      if (ttl.isZero() || lastUse.plus(ttl).isBefore(Instant.now())) {
        return null;
      }
      return new Entry(key, envelope, file, bytes.length, lastUse);
    }
    if (d.writable) {
      d.touch(file);
    }
    return new Entry(key, envelope, file, bytes.length, lastUse);
  }

  /** Whether an entry file exists for {@code key}, without reading it. */
  public boolean exists(String key) {
    d.op();
    return Files.exists(d.entryFile(key), LinkOption.NOFOLLOW_LINKS);
  }

  /**
   * Gets ready to store a build's entry while the build runs: the signing key is decoded, and Java's Ed25519 used
   * once, on the writers' thread ({@link CacheStores#ahead}), off the path of the build and of the entry's write.
   * Nothing where this cache is not written; a key that cannot be used is reported by {@link #store}.
   */
  public void prepareToStore() {
    if (!d.writable) {
      return;
    }
    CacheStores.ahead(() -> {
      try {
        d.signing().prepare();
      } catch (IllegalStateException e) {
        // said once by signing(); the store reports it again for its entry
      }
    });
  }

  /**
   * Stores an envelope under {@code key}, atomically, then evicts the least recently used entries beyond
   * the size limit. A failure (disk full, permissions) is logged and leaves no partial file; the build
   * goes on without the cache. Failure envelopes are stored only when a negative TTL is set.
   *
   * @return whether the entry was written
   */
  public boolean store(String key, Envelope envelope) {
    if (!d.writable || (envelope.status() != Envelope.Status.OK && d.settings.negativeTtl().isZero())) {
      return false;
    }
    ByteBuffer whole;
    try {
      whole = ByteBuffer.wrap(EntryCodec.encode(key, envelope.toBytes(), d.signing()));
    } catch (IllegalStateException e) {
      log.warn("cannot sign the cache entry for {}: {}; the build goes on without caching it", key, e.getMessage());
      return false;
    }
    try {
      // A failure leaves no partial file: the temporary one is removed (a failure to remove it is logged).
      try (AtomicFile entry = AtomicFile.create(d.entryFile(key), key, null, d.counted("partial cache file"))) {
        entry.writeForced(whole).replace();
      }
      d.forceDirectory(d.entries);
      maintenance.evict(key);
      return true;
    } catch (IOException | RuntimeException e) {
      log.warn("cannot write cache entry for {} in {} ({}); the build goes on without caching it", key, d.entries,
          e.toString());
      return false;
    }
  }

  /** Waits for the right to compile {@code key}; see {@link CompileLocks#lock}. */
  public LockFile lock(String key) throws InterruptedException {
    return locks.lock(key);
  }

  /** Moves the entry for {@code key} aside, for example because the device refused it. */
  public void discard(String key) {
    d.quarantine(d.entryFile(key), key);
  }

  /** Lists every entry (reading headers and metadata, not verifying binaries), most recently used first. */
  public List<Listing> list() throws IOException {
    return maintenance.list();
  }

  /** Checks every entry fully; moves bad ones aside when {@code remove}. Returns the bad ones. */
  public List<Listing> verify(boolean remove) throws IOException {
    return maintenance.verify(remove);
  }

  /** Removes entries older than {@code maxAge} (if not null), then LRU ones down to {@code maxBytes}. */
  public List<Path> gc(long maxBytes, Duration maxAge) throws IOException {
    return maintenance.gc(maxBytes, maxAge);
  }

  /** Removes every entry, lock and quarantined file; keeps the directory. Returns how many files. */
  public int clear() throws IOException {
    return maintenance.clear();
  }

  /** Current lock files with their holders. */
  public List<String> locksHeld() throws IOException {
    return locks.held();
  }

  /** Number of files in the quarantine. */
  public int quarantined() throws IOException {
    return maintenance.quarantined();
  }

  /** Why writing to {@code dir} is unsafe (owner, group- or world-writable), or null if it is safe. */
  public static String unsafeReason(Path dir, boolean shared) throws IOException {
    return CacheDirectory.unsafeReason(dir, shared);
  }

  Path entryFile(String key) {
    return d.entryFile(key);
  }
}
