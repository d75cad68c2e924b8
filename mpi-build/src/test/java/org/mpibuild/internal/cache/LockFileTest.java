package org.mpibuild.internal.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.internal.settings.CacheSettings;

/** Single flight across processes: real second processes hold, die with, and hand over the lock. */
class LockFileTest {
  static final String KEY = "ef".repeat(32);

  /** Starts LockHolderMain in another JVM and waits until it holds the lock. */
  static Process holder(Path dir, long millis, String mode) throws Exception {
    Process p = new ProcessBuilder("java", "-cp", System.getProperty("java.class.path"),
        LockHolderMain.class.getName(), dir.toString(), KEY, Long.toString(millis), mode)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    String line = out.readLine();
    if (!"LOCKED".equals(line)) {
      p.destroyForcibly();
      throw new AssertionError("the holder process did not take the lock: " + line);
    }
    return p;
  }

  static CacheSettings settings(Path dir) {
    return CacheSettings.in(dir).toBuilder().lockStale(Duration.ofSeconds(30)).lockWait(Duration.ofSeconds(60)).build();
  }

  @Test
  void lockOfAProcessKilledWithSigkillIsTakenOverAtOnce(@TempDir Path dir) throws Exception {
    KernelCache.open(settings(dir));
    Process p = holder(dir, 600_000, "hold");
    p.destroyForcibly(); // SIGKILL: no chance to release
    assertTrue(p.waitFor(10, TimeUnit.SECONDS));
    assertTrue(Files.exists(dir.resolve("locks/" + KEY + ".lock")), "the dead holder left its lock behind");
    KernelCache cache = KernelCache.open(settings(dir));
    long t0 = System.nanoTime();
    try (LockFile lock = cache.lock(KEY)) {
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertNotNull(lock, "the dead holder's lock must be taken over");
      assertTrue(ms < 2000, "took " + ms + " ms although the stale age is 30 s");
      assertTrue(Files.readString(lock.file()).contains("pid=" + ProcessHandle.current().pid()));
    }
  }

  @Test
  void liveHolderIsWaitedForAndItsEntryUsed(@TempDir Path dir) throws Exception {
    KernelCache.open(settings(dir));
    Process p = holder(dir, 1500, "write");
    KernelCache cache = KernelCache.open(settings(dir).toBuilder()
        .lockStale(Duration.ofMillis(200)).lockWait(Duration.ofSeconds(60)).build());
    long t0 = System.nanoTime();
    LockFile lock = cache.lock(KEY);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    try {
      assertTrue(ms >= 1000, "returned after " + ms + " ms, before the live holder finished");
      assertNotNull(cache.lookup(KEY), "the holder's entry is there to use, so the caller need not compile");
    } finally {
      if (lock != null) {
        lock.close();
      }
      assertEquals(0, p.waitFor(30, TimeUnit.SECONDS) ? p.exitValue() : -1);
    }
  }

  @Test
  void lockFromAnotherHostIsTakenOverOnlyWhenStale(@TempDir Path dir) throws Exception {
    KernelCache cache = KernelCache.open(settings(dir).toBuilder()
        .lockStale(Duration.ofMillis(1500)).lockWait(Duration.ofSeconds(60)).build());
    Path lockFile = dir.resolve("locks/" + KEY + ".lock");
    Files.writeString(lockFile, "host=some-other-node\npid=1\nstart=0\nacquired=0\n");
    long t0 = System.nanoTime();
    try (LockFile lock = cache.lock(KEY)) {
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertNotNull(lock);
      assertTrue(ms >= 1300, "a fresh remote lock was taken over after " + ms + " ms, before its stale age");
    }
  }

  @Test
  void refreshedRemoteLockIsNeverTakenOver(@TempDir Path dir) throws Exception {
    KernelCache cache = KernelCache.open(settings(dir).toBuilder()
        .lockStale(Duration.ofMillis(600)).lockWait(Duration.ofMillis(2500)).build());
    Path lockFile = dir.resolve("locks/" + KEY + ".lock");
    String remote = "host=some-other-node\npid=1\nstart=0\nacquired=0\n";
    Files.writeString(lockFile, remote);
    Thread heartbeat = new Thread(() -> {
      try {
        while (!Thread.currentThread().isInterrupted()) {
          Files.setLastModifiedTime(lockFile, FileTime.fromMillis(System.currentTimeMillis()));
          Thread.sleep(100);
        }
      } catch (Exception e) {
        // stopped
      }
    });
    heartbeat.start();
    try {
      long t0 = System.nanoTime();
      LockFile lock = cache.lock(KEY);
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertNull(lock, "a refreshed lock must not be taken over; the caller compiles without it after the wait");
      assertTrue(ms >= 2400, "gave up after " + ms + " ms");
      assertEquals(remote, Files.readString(lockFile), "the remote holder still owns its lock");
    } finally {
      heartbeat.interrupt();
      heartbeat.join();
    }
  }

  @Test
  void heldLockIsRefreshedSoALongCompileNeverLosesIt(@TempDir Path dir) throws Exception {
    KernelCache cache = KernelCache.open(settings(dir).toBuilder()
        .lockStale(Duration.ofMillis(400)).lockWait(Duration.ofSeconds(10)).build());
    try (LockFile lock = cache.lock(KEY)) {
      Thread.sleep(1500);
      long age = System.currentTimeMillis() - Files.getLastModifiedTime(lock.file()).toMillis();
      assertTrue(age < 400, "the heartbeat let the lock age " + age + " ms, past the stale age");
    }
    assertTrue(!Files.exists(dir.resolve("locks/" + KEY + ".lock")), "released");
  }

  @Test
  void emptyLockOlderThanAFewSecondsIsTakenOverNotWaitedForUntilStale(@TempDir Path dir) throws Exception {
    KernelCache cache = KernelCache.open(settings(dir));
    Path lockFile = dir.resolve("locks/" + KEY + ".lock");
    Files.writeString(lockFile, ""); // its holder died between creating it and writing its identity
    Files.setLastModifiedTime(lockFile, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - 10_000));
    long t0 = System.nanoTime();
    try (LockFile lock = cache.lock(KEY)) {
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertNotNull(lock, "the anonymous lock must be taken over");
      assertTrue(ms < 2000, "took " + ms + " ms although the stale age is 30 s");
    }
  }

  @Test
  void hostIdentityNeedsNoDnsAndCarriesTheBootId() throws Exception {
    String id = LockFile.hostName();
    String node = Files.readString(Path.of("/proc/sys/kernel/hostname")).trim();
    assertTrue(id.startsWith(node + "/"), id);
    String boot = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim().replace("-", "");
    assertTrue(id.contains("/" + boot.substring(0, 8)), id);
  }
}
