package org.mpibuild.internal.cache;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.mpibuild.internal.settings.CacheSettings;
import org.mpibuild.internal.base.EssentialWarning;
import org.mpibuild.support.Ownership;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cache's directory: opening it (private to the user unless declared shared), its tag, its three
 * sub-directories, and the counted file operations that the lookup, the locks and the maintenance share.
 *
 * <pre>
 * DIR/CACHEDIR.TAG             marks the directory as a cache for backup tools
 * DIR/entries/KEY.kbin         an entry: entry header, then the envelope (header, metadata, binary)
 * DIR/locks/KEY.lock           held while one process compiles KEY (host, pid, start time); written whole
 *                              to .KEY.lock.N.tmp, then linked to its name
 * DIR/quarantine/KEY.TIME.PID.NANOS.bad  an entry found corrupt, moved aside
 * </pre>
 *
 * <p>{@link CacheFiles} makes every one of these names, and the pattern of those that are the cache's own;
 * {@link AtomicFile} writes the files that others may read while they are written.
 */
final class CacheDirectory {
  private static final Logger log = LoggerFactory.getLogger(CacheDirectory.class);
  static final String TAG_TEXT = "Signature: 8a477f597d28d172789f06886806bc55\n"
      + "# This directory is a kernel cache made by mpi-build; it can be deleted.\n";
  private static final Set<PosixFilePermission> PRIVATE_DIR = PosixFilePermissions.fromString("rwx------");

  final CacheSettings settings;
  final Path dir;
  final Path entries;
  final Path locks;
  final Path quarantine;
  final boolean writable;
  final String writeRefusal;
  private final AtomicLong fileOps = new AtomicLong();
  /** Set on the thread that writes entries after their builds ({@link CacheStores}): its file operations are no build's. */
  static final ThreadLocal<Boolean> AFTER_BUILD = ThreadLocal.withInitial(() -> false);
  /** Entries refused for want of a trusted signature. */
  final AtomicLong untrusted = new AtomicLong();
  /** Time spent deciding whether entries are trusted. */
  final AtomicLong trustCheckNanos = new AtomicLong();
  private EntrySigning signing;

  private CacheDirectory(CacheSettings settings, Path dir, boolean writable, String writeRefusal) {
    this.settings = settings;
    this.dir = dir;
    this.entries = dir.resolve(CacheFiles.ENTRIES);
    this.locks = dir.resolve(CacheFiles.LOCKS);
    this.quarantine = dir.resolve(CacheFiles.QUARANTINE);
    this.writable = writable;
    this.writeRefusal = writeRefusal;
  }

  /**
   * Opens {@code dir}: creates it private to the user if absent and writable, and refuses to write to a
   * directory that is group- or world-writable or owned by someone else, unless declared shared. Returns
   * null when the cache is off or cannot be used at all (logged).
   */
  static CacheDirectory open(CacheSettings settings, Path dir) {
    if (settings.access() == CacheSettings.Access.OFF) {
      return null;
    }
    boolean wantWrite = settings.access() == CacheSettings.Access.ON;
    try {
      if (wantWrite && !Files.exists(dir)) {
        createPrivate(dir, settings.shared());
      }
      if (!Files.isDirectory(dir)) {
        log.warn("kernel cache {} {}; caching is off for this run", dir,
            Files.exists(dir) ? "is not a directory" : "does not exist");
        return null;
      }
      String refusal = wantWrite ? unsafeReason(dir, settings.shared()) : null;
      if (refusal != null) {
        EssentialWarning.print(refusal + "; the cache is used read-only");
      }
      boolean writable = wantWrite && refusal == null;
      CacheDirectory d = new CacheDirectory(settings, dir, writable, refusal);
      for (Path sub : List.of(d.entries, d.locks, d.quarantine)) {
        String linked = notADirectory(sub);
        if (linked != null) {
          EssentialWarning.print("kernel cache " + dir + " is not used: " + linked + "; the cache never reads or "
              + "writes through a link. Remove " + sub + " (the cache makes it again), or choose another "
              + "MPI_BUILD_CACHE_DIR / MPI_BUILD_NODE_CACHE_DIR");
          return null;
        }
        if (writable && !Files.exists(sub, LinkOption.NOFOLLOW_LINKS)) {
          createPrivate(sub, settings.shared());
        }
      }
      if (writable) {
        writeTag(dir);
      }
      return d;
    } catch (IOException e) {
      log.warn("kernel cache {} cannot be used ({}); caching is off for this run", dir, e.toString());
      return null;
    }
  }

  /** Why {@code sub} cannot be one of the cache's sub-directories (a link, a file), or null if it is one or is absent. */
  private static String notADirectory(Path sub) {
    if (Files.isSymbolicLink(sub)) {
      return sub + " is a symbolic link";
    }
    if (Files.exists(sub, LinkOption.NOFOLLOW_LINKS) && !Files.isDirectory(sub, LinkOption.NOFOLLOW_LINKS)) {
      return sub + " is not a directory";
    }
    return null;
  }

  /**
   * Writes the tag when it is absent or incomplete (an empty or cut-short file that a full disk left), through
   * a temporary file renamed into place, so that it is never seen half written. Anything else there is left alone.
   */
  private static void writeTag(Path dir) throws IOException {
    Path tag = dir.resolve(CacheFiles.TAG);
    if (tagged(dir) || (Files.exists(tag, LinkOption.NOFOLLOW_LINKS) && !incompleteTag(dir))) {
      return;
    }
    try (AtomicFile f = AtomicFile.create(tag, CacheFiles.TAG, null, AtomicFile.UNCOUNTED)) {
      f.write(TAG_TEXT, StandardCharsets.UTF_8).permissions(PosixFilePermissions.fromString("rw-r--r--")).replace();
    }
  }

  /** Whether {@code dir}'s tag is a regular file holding the start of the tag's text only: one a full disk cut short. */
  private static boolean incompleteTag(Path dir) {
    Path tag = dir.resolve(CacheFiles.TAG);
    try {
      return Files.isRegularFile(tag, LinkOption.NOFOLLOW_LINKS) && Files.size(tag) < TAG_TEXT.length()
          && TAG_TEXT.startsWith(Files.readString(tag));
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /**
   * Opens an existing cache for maintenance: never creates anything, and refuses a directory that does not
   * carry the tag the library writes (so that {@code --dir $HOME} or {@code --dir /} is never taken for a
   * cache) or that is unsafe to write when writing is asked for.
   *
   * @throws IllegalStateException saying why it cannot be used
   */
  static CacheDirectory openForAdmin(CacheSettings settings, Path dir, boolean write) {
    if (!Files.exists(dir)) {
      throw new IllegalStateException("no kernel cache at " + dir + ": it does not exist");
    }
    if (!Files.isDirectory(dir)) {
      throw new IllegalStateException("no kernel cache at " + dir + ": it is a " + (Files.isRegularFile(dir)
          ? "regular file" : "special file") + ", not a directory");
    }
    // A tag cut short by a full disk, in a directory that holds the cache's entries/, is the library's own: it
    // is accepted (and mended when writing), so that a full disk never shuts the commands out for good.
    boolean mendable = incompleteTag(dir) && Files.isDirectory(dir.resolve(CacheFiles.ENTRIES), LinkOption.NOFOLLOW_LINKS);
    if (!tagged(dir) && !mendable) {
      throw new IllegalStateException(dir + " is not an mpi-build kernel cache: it has no " + CacheFiles.TAG
          + " written by mpi-build, so nothing in it is touched");
    }
    String refusal;
    try {
      refusal = write ? unsafeReason(dir, settings.shared()) : null;
    } catch (IOException e) {
      throw new IllegalStateException("cannot read the attributes of " + dir + ": " + e.getMessage(), e);
    }
    if (refusal != null) {
      throw new IllegalStateException(refusal);
    }
    if (write && mendable) {
      try {
        writeTag(dir);
      } catch (IOException e) {
        throw new IllegalStateException("cannot mend the incomplete " + CacheFiles.TAG + " of " + dir + ": " + e, e);
      }
    }
    return new CacheDirectory(settings, dir, write, null);
  }

  /** Whether {@code dir} carries the tag this library writes (a regular file, not a link, with its text). */
  static boolean tagged(Path dir) {
    Path tag = dir.resolve(CacheFiles.TAG);
    try {
      return Files.isRegularFile(tag, LinkOption.NOFOLLOW_LINKS) && Files.size(tag) < 4096
          && Files.readString(tag).equals(TAG_TEXT);
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /** Whether {@code file} is a regular file (not a link) with a name the cache writes ({@link CacheFiles#OWN}). */
  static boolean ownFile(Path file) {
    return CacheFiles.own(file.getFileName().toString()) && Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS);
  }

  /**
   * The signing key and the trusted keys, opened on first use (which creates the user's key).
   *
   * @throws IllegalStateException if the key cannot be used
   */
  synchronized EntrySigning signing() {
    if (signing == null) {
      try {
        signing = EntrySigning.open(settings.signingKey(), settings.trustedKeys());
      } catch (IllegalStateException e) {
        if (WARNED_KEYS.add(settings.signingKey().toAbsolutePath())) {
          EssentialWarning.print(e.getMessage() + ". Until then the kernel cache is not used: nothing is read from it "
              + "or written to it");
        }
        throw e;
      }
    }
    return signing;
  }

  /** The signing keys whose problem was already printed by this process: once is enough. */
  private static final Set<Path> WARNED_KEYS = ConcurrentHashMap.newKeySet();

  long fileOperations() {
    return fileOps.get();
  }

  /** Counts one file system call, unless it is made after a build ({@link #AFTER_BUILD}). */
  void op() {
    if (!AFTER_BUILD.get()) {
      fileOps.incrementAndGet();
    }
  }

  Path entryFile(String key) {
    return entries.resolve(CacheFiles.entry(key));
  }

  Path lockFile(String key) {
    return locks.resolve(CacheFiles.lock(key));
  }

  /**
   * This directory's counting of an atomic write's calls; a temporary file that a failure leaves is removed with
   * {@link #delete}, which logs (naming it {@code what}) rather than throws when it cannot remove it.
   */
  AtomicFile.Calls counted(String what) {
    return new AtomicFile.Calls() {
      @Override
      public void op() {
        CacheDirectory.this.op();
      }

      @Override
      public void discard(Path temporary) {
        delete(temporary, what);
      }
    };
  }

  /** Every file in {@code sub}, whatever its name or kind, without following links. */
  List<Path> filesIn(Path sub) throws IOException {
    List<Path> files = new ArrayList<>();
    if (!Files.isDirectory(sub, LinkOption.NOFOLLOW_LINKS)) {
      return files;
    }
    op();
    try (DirectoryStream<Path> s = Files.newDirectoryStream(sub)) {
      for (Path f : s) {
        files.add(f);
      }
    }
    return files;
  }

  /** The entry files that are the cache's own: regular files named KEY.kbin. */
  List<Path> entryFiles() throws IOException {
    List<Path> own = new ArrayList<>();
    for (Path f : filesIn(entries)) {
      if (CacheFiles.isEntry(f.getFileName().toString()) && ownFile(f)) {
        own.add(f);
      }
    }
    return own;
  }

  /** Removes a file, counting the operation; a failure is logged, naming {@code what} it was. */
  void delete(Path file, String what) {
    try {
      op();
      Files.deleteIfExists(file);
    } catch (IOException e) {
      log.warn("cannot remove {} {}: {}", what, file, e.toString());
    }
  }

  /** Moves an entry aside under a name unique per process and moment; deletes it if it cannot be moved. */
  void quarantine(Path file, String key) {
    if (!writable) {
      return;
    }
    try {
      op();
      Files.move(file, quarantine.resolve(CacheFiles.quarantined(key, System.currentTimeMillis(),
          ProcessHandle.current().pid(), System.nanoTime())), StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      delete(file, "corrupt cache entry (it could not be moved aside)");
    }
  }

  void touch(Path file) {
    try {
      op();
      Files.setLastModifiedTime(file, FileTime.from(Instant.now()));
    } catch (IOException e) {
      log.debug("cannot refresh last use of {}: {}", file, e.toString());
    }
  }

  void forceDirectory(Path d) {
    try (FileChannel ch = FileChannel.open(d, StandardOpenOption.READ)) {
      op();
      ch.force(true);
    } catch (IOException e) {
      log.debug("cannot fsync directory {}: {}", d, e.toString());
    }
  }

  void requireWritable() {
    if (!writable) {
      throw new IllegalStateException(writeRefusal != null ? writeRefusal
          : "the kernel cache " + dir + " is read-only (MPI_BUILD_CACHE=read-only)");
    }
  }

  static Instant mtime(Path f) {
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
  static String unsafeReason(Path d, boolean shared) throws IOException {
    if (shared) {
      return null;
    }
    PosixFileAttributes a;
    Path real = d.toRealPath(); // a link to the directory is judged by its target
    try {
      a = Files.readAttributes(real, PosixFileAttributes.class);
    } catch (UnsupportedOperationException e) {
      return null;
    }
    String hint = ": refusing to write to it. If it is meant to be shared, set MPI_BUILD_CACHE_SHARED=true; "
        + "otherwise choose a private MPI_BUILD_CACHE_DIR";
    if (!Ownership.mine(real)) {
      return "kernel cache directory " + d + " is owned by " + Ownership.owner(real) + ", not by you ("
          + Ownership.me() + ")" + hint;
    }
    Set<PosixFilePermission> p = a.permissions();
    if (p.contains(PosixFilePermission.GROUP_WRITE) || p.contains(PosixFilePermission.OTHERS_WRITE)) {
      return "kernel cache directory " + d + " is " + (p.contains(PosixFilePermission.OTHERS_WRITE) ? "world" : "group")
          + "-writable (" + PosixFilePermissions.toString(p) + ")" + hint;
    }
    return null;
  }
}
