package org.mpibuild;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.mpibuild.internal.cache.CacheKey;
import org.mpibuild.internal.cache.KernelCache;
import org.mpibuild.internal.settings.CacheSettings;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.SettingSource;

/**
 * Inspects and maintains a persistent kernel cache directory: what {@code mpi-build cache} and
 * {@code mpi-build doctor} do. Not collective; safe while jobs use the cache.
 *
 * <pre>{@code
 * CacheAdmin cache = CacheAdmin.open(Path.of("/scratch/me/kernels"), false);
 * for (CacheAdmin.Entry e : cache.list()) {
 *   System.out.println(e.key() + " " + e.kernelNames() + " " + e.bytes());
 * }
 * }</pre>
 */
public final class CacheAdmin {
  /**
   * One entry as listed, without its binary read.
   *
   * @param key the entry's key
   * @param file the entry's file
   * @param bytes the file's size
   * @param lastUse when a build last used it
   * @param backend the backend that built it ({@code ?} if corrupt)
   * @param target the target it was built for ({@code ?} if corrupt)
   * @param kernelNames its kernels
   * @param status {@code ok}, a failure's status (a remembered compile failure), or {@code corrupt}
   * @param problem why it is corrupt, if it is
   */
  public record Entry(String key, Path file, long bytes, Instant lastUse, String backend, String target,
      List<String> kernelNames, String status, Optional<String> problem) {}

  private final KernelCache cache;

  private CacheAdmin(KernelCache cache) {
    this.cache = cache;
  }

  /**
   * Returns the cache directory this process is configured with ({@code MPI_BUILD_CACHE_DIR}, else
   * {@code ~/.cache/mpi-build}), or empty when the cache is off ({@code MPI_BUILD_CACHE=off}).
   *
   * @return the directory
   * @throws IllegalArgumentException naming the setting, if a cache setting is invalid
   */
  public static Optional<Path> configuredDirectory() {
    CacheSettings s = CacheSettings.from(SettingSource.ofProcess());
    return s.access() == CacheSettings.Access.OFF ? Optional.empty() : Optional.of(s.dir());
  }

  /**
   * Returns the file holding this user's key that signs cache entries ({@code MPI_BUILD_SIGNING_KEY}, else
   * {@code ~/.config/mpi-build/signing-key}); it is created on the first write.
   *
   * @return the key file
   */
  public static Path signingKey() {
    return CacheSettings.from(SettingSource.ofProcess()).signingKey();
  }

  /**
   * Returns the file listing the public keys, besides your own, whose cache entries you load
   * ({@code MPI_BUILD_TRUSTED_KEYS}, else {@code ~/.config/mpi-build/trusted-keys}). Trust is yours alone:
   * nothing in a cache directory makes a key trusted.
   *
   * @return the trust file (it may not exist yet)
   */
  public static Path trustedKeys() {
    return CacheSettings.from(SettingSource.ofProcess()).trustedKeys();
  }

  /**
   * Adds the public keys in {@code keyFile} to your trust file ({@link #trustedKeys()}), creating it (mode 600,
   * in a directory of mode 700) if absent: entries signed by those keys load from then on. {@code keyFile}
   * holds base64 public keys one per line ({@code #} comments), or is someone's signing key file, of which
   * only the {@code public} line is read.
   *
   * @param keyFile the keys to trust
   * @return the keys added; those already trusted are not repeated
   * @throws IOException if {@code keyFile} holds no public key, or the trust file is not a private file of
   *     yours or cannot be written; the message says which
   */
  public static List<String> trust(Path keyFile) throws IOException {
    return org.mpibuild.internal.cache.EntrySigning.trust(trustedKeys(), keyFile);
  }

  /**
   * Returns whether this process is configured to use the cache without writing
   * ({@code MPI_BUILD_CACHE=read-only}).
   *
   * @return whether the cache is read-only
   * @throws IllegalArgumentException naming the setting, if a cache setting is invalid
   */
  public static boolean configuredReadOnly() {
    return CacheSettings.from(SettingSource.ofProcess()).access() == CacheSettings.Access.READ_ONLY;
  }

  /**
   * Opens an existing cache for inspection or maintenance. Creates nothing, and acts only on a directory
   * that carries the tag ({@code CACHEDIR.TAG}) the library writes; it never follows a link, and deletes
   * only regular files whose names the cache writes.
   *
   * @param dir the directory, or null for the configured one
   * @param write whether to open it for writing (gc, clear, verify --remove)
   * @return the cache
   * @throws IllegalStateException if there is no cache there (absent, a file, untagged), or writing is
   *     refused (an unsafe directory); the message says why
   */
  public static CacheAdmin open(Path dir, boolean write) {
    CacheSettings s = settings(dir);
    return new CacheAdmin(KernelCache.openForAdmin(s, s.dir(), write));
  }

  /**
   * Returns why a job would refuse to write to {@code dir} (owned by someone else, group- or world-writable,
   * and not declared shared with {@code MPI_BUILD_CACHE_SHARED}).
   *
   * @param dir the directory, or null for the configured one
   * @return the reason, or empty if writing is allowed
   * @throws IOException if its attributes cannot be read
   */
  public static Optional<String> unsafeReason(Path dir) throws IOException {
    CacheSettings s = settings(dir);
    return Optional.ofNullable(KernelCache.unsafeReason(s.dir(), s.shared()));
  }

  /**
   * Returns the cache key under which a build of {@code request} by {@code backend}, for this rank's own
   * target, is stored: 64 lowercase hex digits, the entry's file name in {@code entries/}.
   *
   * @param request what is built
   * @param backend an open backend
   * @return the key
   */
  public static String keyOf(KernelSource request, Backend backend) {
    return CacheKey.of(request, backend);
  }

  /**
   * Returns the identity this host writes into cache locks, found without DNS: the kernel's node name plus
   * the start of the boot and machine ids. A lock held on this host by a process that has died is taken
   * over at once; one from another host only once it goes stale.
   *
   * @return the identity
   */
  public static String hostIdentity() {
    return org.mpibuild.internal.cache.LockFile.hostName();
  }

  private static CacheSettings settings(Path dir) {
    CacheSettings s = CacheSettings.from(SettingSource.ofProcess());
    return dir == null ? s : s.toBuilder().dir(dir.toAbsolutePath()).build();
  }

  /** @return the cache directory */
  public Path directory() {
    return cache.dir();
  }

  /** @return the size the cache is kept under ({@code MPI_BUILD_CACHE_MAX_BYTES}) */
  public long maxBytes() {
    return cache.settings().maxBytes();
  }

  /** @return whether this process may write to the cache */
  public boolean writable() {
    return cache.writable();
  }

  /**
   * Lists every entry, most recently used first, reading headers and metadata but not verifying binaries.
   *
   * @return the entries
   * @throws IOException if the directory cannot be read
   */
  public List<Entry> list() throws IOException {
    return entries(cache.list());
  }

  /**
   * Checks every entry fully, moving bad ones to the quarantine when {@code remove}.
   *
   * @param remove whether to move bad entries aside (needs a cache opened for writing)
   * @return the bad entries
   * @throws IOException if the directory cannot be read
   */
  public List<Entry> verify(boolean remove) throws IOException {
    return entries(cache.verify(remove));
  }

  /**
   * Removes entries unused for longer than {@code maxAge} (when given), then the least recently used until
   * the cache holds at most {@code maxBytes}; empties the quarantine.
   *
   * @param maxBytes the size to keep under
   * @param maxAge the age past which entries go, or null
   * @return the files removed
   * @throws IOException if the directory cannot be read or written
   */
  public List<Path> gc(long maxBytes, Duration maxAge) throws IOException {
    return cache.gc(maxBytes, maxAge);
  }

  /**
   * Removes every entry, lock and quarantined file; keeps the directory.
   *
   * @return how many files were removed
   * @throws IOException if the directory cannot be read or written
   */
  public int clear() throws IOException {
    return cache.clear();
  }

  /**
   * Returns the compile locks held now, each with its holder (host, pid).
   *
   * @return one line per lock
   * @throws IOException if the directory cannot be read
   */
  public List<String> locks() throws IOException {
    return cache.locksHeld();
  }

  /**
   * Returns how many corrupt entries were moved to the quarantine and not yet removed by {@link #gc}.
   *
   * @return the count
   * @throws IOException if the directory cannot be read
   */
  public int quarantined() throws IOException {
    return cache.quarantined();
  }

  private static List<Entry> entries(List<KernelCache.Listing> listings) {
    List<Entry> out = new ArrayList<>(listings.size());
    for (KernelCache.Listing l : listings) {
      out.add(new Entry(l.key(), l.file(), l.bytes(), l.lastUse(), l.backend(), l.target(), l.kernelNames(), l.status(),
          Optional.ofNullable(l.problem())));
    }
    return out;
  }
}
