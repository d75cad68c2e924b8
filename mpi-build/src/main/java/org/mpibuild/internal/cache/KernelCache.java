package org.mpibuild.internal.cache;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;
import org.mpibuild.CorruptBinaryException;
import org.mpibuild.internal.Envelope;
import org.mpibuild.internal.Settings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The persistent kernel cache: one directory, one file per kernel.
 *
 * <pre>
 * DIR/CACHEDIR.TAG             marks the directory as a cache for backup tools
 * DIR/entries/KEY.kbin         an entry: entry header, then the envelope (header, metadata, binary)
 * DIR/locks/KEY.lock           held while one process compiles KEY (host, pid, start time)
 * DIR/quarantine/KEY.TIME.PID.NANOS.bad  an entry found corrupt, moved aside
 * </pre>
 *
 * The entry format is {@link EntryCodec}'s: a 48-byte entry header, then the envelope, which carries its
 * own magic, version, lengths, SHA-256 of the binary and metadata checksum; a reader checks all of them.
 *
 * <p>Entries are written to a temporary file in {@code entries/}, forced to disk, renamed into place
 * atomically, and the directory is forced too: a reader sees no entry or a whole one. Every file system
 * call is counted ({@link #fileOperations()}), so tests can check that the count per kernel does not grow
 * with the number of ranks.
 */
public final class KernelCache {
  private static final Logger log = LoggerFactory.getLogger(KernelCache.class);
  private static final String SUFFIX = ".kbin";
  private static final Set<PosixFilePermission> PRIVATE_DIR = PosixFilePermissions.fromString("rwx------");

  /** A cache entry as found on disk. */
  public record Entry(String key, Envelope envelope, Path file, long bytes, Instant lastUse) {}

  /** An entry as listed, without reading its binary. */
  public record Listing(String key, Path file, long bytes, Instant lastUse, String backend, String target,
      List<String> kernelNames, String status, String problem) {}

  private final CacheSettings settings;
  private final Path dir;
  private final Path entries;
  private final Path locks;
  private final Path quarantine;
  private final boolean writable;
  private final String writeRefusal;
  private final AtomicLong fileOps = new AtomicLong();

  private KernelCache(CacheSettings settings, Path dir, boolean writable, String writeRefusal) {
    this.settings = settings;
    this.dir = dir;
    this.entries = dir.resolve("entries");
    this.locks = dir.resolve("locks");
    this.quarantine = dir.resolve("quarantine");
    this.writable = writable;
    this.writeRefusal = writeRefusal;
  }

  /**
   * Opens the cache in {@code settings.dir()}: creates it private to the user if absent and writable, and
   * refuses to write to a directory that is group- or world-writable or owned by someone else, unless
   * declared shared. Returns null when the cache is off or cannot be used at all (logged).
   */
  public static KernelCache open(CacheSettings settings) {
    return open(settings, settings.dir());
  }

  /** Opens the cache in {@code dir} with {@code settings} (used for the node-local cache). */
  public static KernelCache open(CacheSettings settings, Path dir) {
    if (settings.access() == CacheSettings.Access.OFF) {
      return null;
    }
    boolean wantWrite = settings.access() == CacheSettings.Access.ON;
    try {
      if (wantWrite && !Files.exists(dir)) {
        createPrivate(dir, settings.shared());
      }
      if (!Files.isDirectory(dir)) {
        log.warn("kernel cache {} does not exist; caching is off for this run", dir);
        return null;
      }
      String refusal = wantWrite ? unsafeReason(dir, settings.shared()) : null;
      if (refusal != null) {
        log.warn("{}; the cache is used read-only", refusal);
      }
      boolean writable = wantWrite && refusal == null;
      KernelCache cache = new KernelCache(settings, dir, writable, refusal);
      if (writable) {
        for (Path sub : List.of(cache.entries, cache.locks, cache.quarantine)) {
          if (!Files.isDirectory(sub)) {
            createPrivate(sub, settings.shared());
          }
        }
        Path tag = dir.resolve("CACHEDIR.TAG");
        if (!Files.exists(tag)) {
          Files.writeString(tag, "Signature: 8a477f597d28d172789f06886806bc55\n"
              + "# This directory is a kernel cache made by mpi-build; it can be deleted.\n");
        }
      }
      return cache;
    } catch (IOException e) {
      log.warn("kernel cache {} cannot be used ({}); caching is off for this run", dir, e.toString());
      return null;
    }
  }

  /** Why writing is refused, or null if it is allowed or not wanted. */
  public String writeRefusal() {
    return writeRefusal;
  }

  /** Whether this cache writes entries. */
  public boolean writable() {
    return writable;
  }

  /** The cache directory. */
  public Path dir() {
    return dir;
  }

  /** The settings it was opened with. */
  public CacheSettings settings() {
    return settings;
  }

  /** How many file system calls this object has made. */
  public long fileOperations() {
    return fileOps.get();
  }

  void op() {
    fileOps.incrementAndGet();
  }

  /**
   * Returns the entry for {@code key}, or null on a miss. A corrupt or truncated entry, or one that does
   * not match the key, is reported, moved aside and treated as a miss. An expired negative entry is a
   * miss. A hit refreshes the entry's last use (unless read-only).
   */
  public Entry lookup(String key) {
    Path file = entryFile(key);
    byte[] bytes;
    try {
      op();
      bytes = Files.readAllBytes(file);
    } catch (NoSuchFileException e) {
      return null;
    } catch (IOException e) {
      log.warn("cannot read cache entry {}: {}", file, e.toString());
      return null;
    }
    Envelope envelope;
    try {
      envelope = EntryCodec.decode(key, bytes);
    } catch (CorruptBinaryException e) {
      log.warn("cache entry {} is corrupt ({}); moving it aside and rebuilding", file, e.getMessage());
      quarantine(file, key);
      return null;
    }
    Instant lastUse;
    try {
      op();
      lastUse = Files.getLastModifiedTime(file).toInstant();
    } catch (IOException e) {
      lastUse = Instant.now();
    }
    if (envelope.status() != Envelope.Status.OK) {
      if (settings.negativeTtl().isZero() || lastUse.plus(settings.negativeTtl()).isBefore(Instant.now())) {
        return null;
      }
      return new Entry(key, envelope, file, bytes.length, lastUse);
    }
    if (writable) {
      touch(file);
    }
    return new Entry(key, envelope, file, bytes.length, lastUse);
  }

  /** Whether an entry file exists for {@code key}, without reading it. */
  public boolean exists(String key) {
    op();
    return Files.exists(entryFile(key));
  }

  /**
   * Stores an envelope under {@code key}, atomically, then evicts the least recently used entries beyond
   * the size limit. A failure (disk full, permissions) is logged and leaves no partial file; the build
   * goes on without the cache. Failure envelopes are stored only when a negative TTL is set.
   *
   * @return whether the entry was written
   */
  public boolean store(String key, Envelope envelope) {
    if (!writable) {
      return false;
    }
    if (envelope.status() != Envelope.Status.OK && settings.negativeTtl().isZero()) {
      return false;
    }
    byte[] body = envelope.toBytes();
    ByteBuffer header = EntryCodec.header(key);
    Path tmp = null;
    try {
      op();
      tmp = Files.createTempFile(entries, "." + key + ".", ".tmp");
      try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
        op();
        ByteBuffer b = ByteBuffer.wrap(body);
        while (header.hasRemaining()) {
          ch.write(header);
        }
        while (b.hasRemaining()) {
          ch.write(b);
        }
        ch.force(true);
      }
      op();
      Files.move(tmp, entryFile(key), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      tmp = null;
      forceDirectory(entries);
      evict(key);
      return true;
    } catch (IOException | RuntimeException e) {
      log.warn("cannot write cache entry for {} in {} ({}); the build goes on without caching it", key, entries,
          e.toString());
      return false;
    } finally {
      if (tmp != null) {
        delete(tmp, "partial cache file");
      }
    }
  }

  /** Removes a file, counting the operation; a failure is logged, naming {@code what} it was. */
  private void delete(Path file, String what) {
    try {
      op();
      Files.deleteIfExists(file);
    } catch (IOException e) {
      log.warn("cannot remove {} {}: {}", what, file, e.toString());
    }
  }

  /**
   * Waits for the right to compile {@code key}: returns a held lock, or null when the entry appeared
   * meanwhile, or when waiting took longer than the lock wait (logged; the caller then compiles without
   * the lock, which can cost a second compile but never a torn entry). A lock whose holder died on this
   * host is taken over at once; one from another host once it has gone without a heartbeat for the stale
   * age. Returns null at once when the cache is read-only.
   */
  public CacheLock lock(String key) throws InterruptedException {
    if (!writable) {
      return null;
    }
    Path file = locks.resolve(key + ".lock");
    long stale = settings.lockStale().toMillis();
    long heartbeat = Math.max(50, stale / 4);
    long deadline = System.nanoTime() + settings.lockWait().toNanos();
    long sleep = 20;
    boolean reported = false;
    while (true) {
      try {
        if (exists(key)) {
          return null;
        }
        CacheLock lock = CacheLock.tryCreate(this, file, heartbeat);
        if (lock != null) {
          return lock;
        }
        CacheLock.Holder holder = readHolder(file);
        if (holder != null) {
          long age = ageMillis(file);
          if (holder.deadOnThisHost()) {
            log.warn("taking over cache lock {}: its holder ({}) is dead", file, holder);
            takeOver(file);
            continue;
          }
          if (age > stale) {
            log.warn("taking over cache lock {}: its holder ({}) has not refreshed it for {} ms", file, holder, age);
            takeOver(file);
            continue;
          }
          if (!reported) {
            log.info("waiting for {} to finish compiling {}", holder, key);
            reported = true;
          }
        }
      } catch (IOException e) {
        log.warn("cache lock {} cannot be used ({}); compiling without it", file, e.toString());
        return null;
      }
      if (System.nanoTime() > deadline) {
        log.warn("waited {} for cache lock {}; compiling without it", settings.lockWait(), file);
        return null;
      }
      Thread.sleep(sleep);
      sleep = Math.min(500, sleep * 2);
    }
  }

  /** Moves the entry for {@code key} aside, for example because the device refused it. */
  public void discard(String key) {
    quarantine(entryFile(key), key);
  }

  /** Lists every entry (reading headers and metadata, not verifying binaries). */
  public List<Listing> list() throws IOException {
    List<Listing> out = new ArrayList<>();
    for (Path f : entryFiles()) {
      String key = keyOf(f);
      long size = Files.size(f);
      Instant lastUse = Files.getLastModifiedTime(f).toInstant();
      try {
        Envelope e = EntryCodec.decode(key, Files.readAllBytes(f));
        Envelope.Metadata m = e.metadata();
        out.add(new Listing(key, f, size, lastUse, m.backend(), m.target(), m.kernelNames(),
            e.status().name().toLowerCase(java.util.Locale.ROOT), null));
      } catch (CorruptBinaryException ex) {
        out.add(new Listing(key, f, size, lastUse, "?", "?", List.of(), "corrupt", ex.getMessage()));
      }
    }
    out.sort(Comparator.comparing(Listing::lastUse).reversed());
    return out;
  }

  /** Checks every entry fully; moves bad ones aside when {@code remove}. Returns the bad ones. */
  public List<Listing> verify(boolean remove) throws IOException {
    List<Listing> bad = new ArrayList<>();
    for (Listing l : list()) {
      if (l.problem() != null) {
        bad.add(l);
        if (remove) {
          quarantine(l.file(), l.key());
        }
      }
    }
    return bad;
  }

  /**
   * Removes entries unused for longer than {@code maxAge} (when not null), then the least recently used
   * ones until the cache holds at most {@code maxBytes}; empties the quarantine. Returns what was removed.
   */
  public List<Path> gc(long maxBytes, Duration maxAge) throws IOException {
    requireWritable();
    List<Path> removed = new ArrayList<>();
    Instant cutoff = maxAge == null ? null : Instant.now().minus(maxAge);
    List<Path> files = new ArrayList<>(entryFiles());
    files.sort(Comparator.comparing(KernelCache::mtime));
    long total = 0;
    for (Path f : files) {
      total += Files.size(f);
    }
    for (Path f : files) {
      if ((cutoff != null && mtime(f).isBefore(cutoff)) || total > maxBytes) {
        total -= Files.size(f);
        Files.deleteIfExists(f);
        removed.add(f);
      }
    }
    try (DirectoryStream<Path> q = Files.newDirectoryStream(quarantine)) {
      for (Path f : q) {
        Files.deleteIfExists(f);
        removed.add(f);
      }
    }
    return removed;
  }

  /** Removes every entry, lock and quarantined file; keeps the directory. Returns how many files. */
  public int clear() throws IOException {
    requireWritable();
    int n = 0;
    for (Path sub : List.of(entries, locks, quarantine)) {
      try (DirectoryStream<Path> s = Files.newDirectoryStream(sub)) {
        for (Path f : s) {
          Files.deleteIfExists(f);
          n++;
        }
      }
    }
    return n;
  }

  /** Current lock files with their holders. */
  public List<String> locksHeld() throws IOException {
    List<String> out = new ArrayList<>();
    if (!Files.isDirectory(locks)) {
      return out;
    }
    try (DirectoryStream<Path> s = Files.newDirectoryStream(locks, "*.lock")) {
      for (Path f : s) {
        CacheLock.Holder h = readHolder(f);
        out.add(f.getFileName() + " held by " + (h == null ? "?" : h));
      }
    }
    return out;
  }

  /** Number of files in the quarantine. */
  public int quarantined() throws IOException {
    if (!Files.isDirectory(quarantine)) {
      return 0;
    }
    try (DirectoryStream<Path> s = Files.newDirectoryStream(quarantine)) {
      int n = 0;
      for (Path ignored : s) {
        n++;
      }
      return n;
    }
  }

  Path entryFile(String key) {
    return entries.resolve(key + SUFFIX);
  }

  private List<Path> entryFiles() throws IOException {
    List<Path> files = new ArrayList<>();
    if (!Files.isDirectory(entries)) {
      return files;
    }
    op();
    try (DirectoryStream<Path> s = Files.newDirectoryStream(entries, "*" + SUFFIX)) {
      for (Path f : s) {
        files.add(f);
      }
    }
    return files;
  }

  private void evict(String keep) throws IOException {
    List<Path> files = entryFiles();
    long total = 0;
    List<Object[]> sized = new ArrayList<>();
    for (Path f : files) {
      op();
      try {
        long size = Files.size(f);
        total += size;
        sized.add(new Object[] {f, size, mtime(f)});
      } catch (NoSuchFileException e) {
        // removed by another process meanwhile
      }
    }
    if (total <= settings.maxBytes()) {
      return;
    }
    sized.sort(Comparator.comparing(o -> (Instant) o[2]));
    for (Object[] o : sized) {
      Path f = (Path) o[0];
      if (total <= settings.maxBytes()) {
        break;
      }
      if (f.equals(entryFile(keep))) {
        continue;
      }
      op();
      if (Files.deleteIfExists(f)) {
        total -= (Long) o[1];
        log.debug("evicted cache entry {} (least recently used)", f.getFileName());
      }
    }
  }

  private void quarantine(Path file, String key) {
    if (!writable) {
      return;
    }
    try {
      op();
      // Unique per process and moment: two corrupt finds within one millisecond must not overwrite each other.
      Files.move(file, quarantine.resolve(key + "." + System.currentTimeMillis() + "." + ProcessHandle.current().pid()
          + "." + System.nanoTime() + ".bad"), StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      delete(file, "corrupt cache entry (it could not be moved aside)");
    }
  }

  private void takeOver(Path lockFile) throws IOException {
    Path aside = locks.resolve(lockFile.getFileName() + "." + ProcessHandle.current().pid() + "." + System.nanoTime()
        + ".stale");
    try {
      op();
      Files.move(lockFile, aside, StandardCopyOption.ATOMIC_MOVE);
      op();
      Files.deleteIfExists(aside);
    } catch (NoSuchFileException e) {
      // someone else took it over first; try again
    }
  }

  private CacheLock.Holder readHolder(Path lockFile) {
    try {
      op();
      return CacheLock.Holder.parse(Files.readString(lockFile));
    } catch (IOException e) {
      return null;
    }
  }

  private long ageMillis(Path file) {
    try {
      op();
      return System.currentTimeMillis() - Files.getLastModifiedTime(file).toMillis();
    } catch (IOException e) {
      return 0;
    }
  }

  private void touch(Path file) {
    try {
      op();
      Files.setLastModifiedTime(file, FileTime.from(Instant.now()));
    } catch (IOException e) {
      log.debug("cannot refresh last use of {}: {}", file, e.toString());
    }
  }

  private void forceDirectory(Path d) {
    try (FileChannel ch = FileChannel.open(d, StandardOpenOption.READ)) {
      op();
      ch.force(true);
    } catch (IOException e) {
      log.debug("cannot fsync directory {}: {}", d, e.toString());
    }
  }

  private void requireWritable() {
    if (!writable) {
      throw new IllegalStateException(writeRefusal != null ? writeRefusal
          : "the kernel cache " + dir + " is read-only (MPI_BUILD_CACHE=read-only)");
    }
  }

  private static String keyOf(Path f) {
    String n = f.getFileName().toString();
    return n.substring(0, n.length() - SUFFIX.length());
  }

  private static Instant mtime(Path f) {
    try {
      return Files.getLastModifiedTime(f).toInstant();
    } catch (IOException e) {
      return Instant.EPOCH;
    }
  }

  private static void createPrivate(Path d, boolean shared) throws IOException {
    try {
      if (shared) {
        Files.createDirectories(d);
      } else {
        Files.createDirectories(d, PosixFilePermissions.asFileAttribute(PRIVATE_DIR));
        Files.setPosixFilePermissions(d, PRIVATE_DIR);
      }
    } catch (FileAlreadyExistsException e) {
      // created by another process meanwhile
    }
  }

  /** Why writing to {@code d} is unsafe (owner, group- or world-writable), or null if it is safe. */
  public static String unsafeReason(Path d, boolean shared) throws IOException {
    if (shared) {
      return null;
    }
    PosixFileAttributes a;
    try {
      a = Files.readAttributes(d, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    } catch (UnsupportedOperationException e) {
      return null;
    }
    String hint = ": refusing to write to it. If it is meant to be shared, set MPI_BUILD_CACHE_SHARED=true; "
        + "otherwise choose a private MPI_BUILD_CACHE_DIR";
    String me = System.getProperty("user.name");
    if (!a.owner().getName().equals(me)) {
      return "kernel cache directory " + d + " is owned by '" + a.owner().getName() + "', not by you ('" + me + "')"
          + hint;
    }
    Set<PosixFilePermission> p = a.permissions();
    if (p.contains(PosixFilePermission.GROUP_WRITE) || p.contains(PosixFilePermission.OTHERS_WRITE)) {
      return "kernel cache directory " + d + " is " + (p.contains(PosixFilePermission.OTHERS_WRITE) ? "world" : "group")
          + "-writable (" + PosixFilePermissions.toString(p) + ")" + hint;
    }
    return null;
  }

}
