package org.mpibuild.internal.cache;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cache's compile locks: one job compiles a key while the others wait for its entry. A lock whose
 * holder died on this host is taken over at once; one from another host once it has gone without a
 * heartbeat for the stale age.
 */
final class CompileLocks {
  private static final Logger log = LoggerFactory.getLogger(CompileLocks.class);
  /**
   * How long a lock file may name no holder before it counts as dead. This library writes a lock whole before
   * it gives it its name, so an empty or cut-short lock is a crash's or a full disk's leftover, or one that an
   * older version is writing at this moment (which takes micro-seconds).
   */
  static final long ANONYMOUS_MILLIS = 250;
  private final CacheDirectory d;

  CompileLocks(CacheDirectory d) {
    this.d = d;
  }

  /**
   * Waits for the right to compile {@code key}: returns a held lock, or null when the entry appeared
   * meanwhile, or when waiting took longer than the lock wait (logged; the caller then compiles without
   * the lock, which can cost a second compile but never a torn entry). Null at once when read-only.
   */
  LockFile lock(String key) throws InterruptedException {
    if (!d.writable) {
      return null;
    }
    Path file = d.lockFile(key);
    long stale = d.settings.lockStale().toMillis();
    long heartbeat = Math.max(50, stale / 4);
    long deadline = System.nanoTime() + d.settings.lockWait().toNanos();
    long sleep = 20;
    boolean reported = false;
    while (true) {
      try {
        d.op();
        if (Files.exists(d.entryFile(key), LinkOption.NOFOLLOW_LINKS)) {
          return null;
        }
        LockFile lock = LockFile.tryCreate(d, file, heartbeat);
        if (lock != null) {
          return lock;
        }
        LockFile.Holder holder = readHolder(file);
        long age = ageMillis(file);
        if ((holder == null || holder.pid() < 0) && age > ANONYMOUS_MILLIS) {
          // Empty or unreadable for seconds: its holder died between creating it and writing its identity.
          log.warn("taking over cache lock {}: it names no holder after {} ms", file, age);
          takeOver(key, file);
          continue;
        }
        if (holder != null) {
          if (holder.deadOnThisHost()) {
            log.warn("taking over cache lock {}: its holder ({}) is dead", file, holder);
            takeOver(key, file);
            continue;
          }
          if (age > stale) {
            log.warn("taking over cache lock {}: its holder ({}) has not refreshed it for {} ms", file, holder, age);
            takeOver(key, file);
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
        log.warn("waited {} for cache lock {}; compiling without it", d.settings.lockWait(), file);
        return null;
      }
      Thread.sleep(sleep);
      sleep = Math.min(500, sleep * 2);
    }
  }

  /** Current lock files with their holders. */
  List<String> held() throws IOException {
    List<String> out = new ArrayList<>();
    if (!Files.isDirectory(d.locks, LinkOption.NOFOLLOW_LINKS)) {
      return out;
    }
    try (DirectoryStream<Path> s = Files.newDirectoryStream(d.locks, CacheFiles.lockGlob())) {
      for (Path f : s) {
        if (!CacheDirectory.ownFile(f)) {
          continue;
        }
        LockFile.Holder h = readHolder(f);
        out.add(f.getFileName() + " held by " + (h == null ? "?" : h));
      }
    }
    return out;
  }

  private void takeOver(String key, Path lockFile) throws IOException {
    Path aside = d.locks.resolve(CacheFiles.staleLock(key, ProcessHandle.current().pid(), System.nanoTime()));
    try {
      d.op();
      Files.move(lockFile, aside, StandardCopyOption.ATOMIC_MOVE);
      d.op();
      Files.deleteIfExists(aside);
    } catch (NoSuchFileException e) {
      // someone else took it over first; try again
    }
  }

  /** The holder a lock file names; null if it is not a regular file (a link is never followed) or unreadable. */
  private LockFile.Holder readHolder(Path lockFile) {
    if (!Files.isRegularFile(lockFile, LinkOption.NOFOLLOW_LINKS)) {
      return null; // a link, a fifo: never opened
    }
    try (FileChannel ch = FileChannel.open(lockFile,
        StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
      d.op();
      ByteBuffer b = ByteBuffer.allocate(4096); // a holder's identity is a few lines
      while (b.hasRemaining() && ch.read(b) >= 0) {
        // until full or at the end
      }
      return LockFile.Holder.parse(new String(b.array(), 0, b.position(), StandardCharsets.UTF_8));
    } catch (IOException e) {
      return null;
    }
  }

  private long ageMillis(Path file) {
    try {
      d.op();
      return System.currentTimeMillis() - Files.getLastModifiedTime(file).toMillis();
    } catch (IOException e) {
      return 0;
    }
  }
}
