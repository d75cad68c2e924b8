package org.mpibuild.internal.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.mpibuild.internal.cache.KernelCacheTest.KEY;
import static org.mpibuild.internal.cache.KernelCacheTest.envelope;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HexFormat;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.internal.settings.CacheSettings;
import org.mpibuild.support.Ownership;

/**
 * Trust rooted in the user, never in a directory's owner; no reading or writing through links inside the
 * cache; what a full disk or a race leaves behind is mended or ignored; ownership by uid (issue 26).
 */
class CacheTrustTest {
  private static final int STRANGER = 54321;

  private static boolean root() throws Exception {
    return Ownership.processUid() == 0;
  }

  private static void chown(Path p, int uid) throws Exception {
    Files.setAttribute(p, "unix:uid", uid, java.nio.file.LinkOption.NOFOLLOW_LINKS);
  }

  /**
   * The attack: another user creates the cache directory first, plants a valid entry signed with
   * their own key, and lists that key in the directory's trusted-keys, as a group cache's owner once did.
   */
  @Test
  void aStrangersDirectoryAndItsTrustFileNeverMakeTheirEntryLoad(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("mpi-build-cache");
    KernelCache stranger = KernelCache.open(CacheSettings.in(dir).toBuilder().signingKey(tmp.resolve("stranger-key"))
        .trustedKeys(tmp.resolve("stranger-trusted")).build());
    assertTrue(stranger.store(KEY, envelope(1000)), "the planted entry, validly signed by the stranger");
    Path trust = dir.resolve("trusted-keys");
    Files.writeString(trust, "# the group's keys\n" + EntrySigning.open(tmp.resolve("stranger-key"), null).publicKey()
        + "\n");
    Files.setPosixFilePermissions(trust, PosixFilePermissions.fromString("rw-r--r--"));
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    if (root()) { // the stranger owns what they made; only root can show that in a test
      try (var files = Files.walk(dir)) {
        for (Path p : files.toList()) {
          chown(p, STRANGER);
        }
      }
    } else {
      System.out.println("not root: the stranger's files keep this user's uid; the trust decision is tested alone");
    }
    KernelCache victim = KernelCache.open(CacheSettings.in(dir).toBuilder().signingKey(tmp.resolve("my-key"))
        .trustedKeys(tmp.resolve("my-trusted")).build());
    assertNotNull(victim);
    assertNull(victim.lookup(KEY), "an entry signed by a key only the directory vouches for is never loaded");
    assertEquals(1, victim.untrustedEntries());
  }

  @Test
  void aLinkedEntriesDirectoryIsNeverReadOrWrittenThrough(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("c");
    Path elsewhere = Files.createDirectory(tmp.resolve("elsewhere"));
    Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    Files.createSymbolicLink(dir.resolve("entries"), elsewhere);
    KernelCache cache = KernelCache.open(CacheSettings.in(dir).toBuilder().signingKey(tmp.resolve("key")).build());
    if (cache != null) {
      cache.store(KEY, envelope(100));
    }
    try (var s = Files.list(elsewhere)) {
      assertEquals(0, s.count(), "nothing written outside the cache through the link");
    }
    assertNull(cache, "a cache whose entries/ is a link is not used");
  }

  @Test
  void anEmptyTagLeftByAFullDiskIsMendedAndNeverShutsTheCommandsOut(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("c");
    CacheSettings s = CacheSettings.in(dir).toBuilder().signingKey(tmp.resolve("key")).build();
    assertTrue(KernelCache.open(s).store(KEY, envelope(100)));
    Files.write(dir.resolve(CacheFiles.TAG), new byte[0]);
    assertEquals(1, KernelCache.openForAdmin(s, dir, false).list().size(), "the commands still see the cache");
    KernelCache.openForAdmin(s, dir, true);
    assertTrue(CacheDirectory.tagged(dir), "mended by a command that writes");
    Files.writeString(dir.resolve(CacheFiles.TAG), CacheDirectory.TAG_TEXT.substring(0, 10));
    assertNotNull(KernelCache.open(s).lookup(KEY));
    assertTrue(CacheDirectory.tagged(dir), "mended by the next job");
    Files.writeString(dir.resolve(CacheFiles.TAG), "something else\n");
    assertThrows(IllegalStateException.class, () -> KernelCache.openForAdmin(s, dir, false),
        "a tag that is not ours stays a refusal");
  }

  @Test
  void anEmptyLockFileIsTakenOverNotWaitedOut(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("c");
    // A lock wait shorter than the 3 s an empty lock used to be respected: waiting it out returns no lock.
    KernelCache cache = KernelCache.open(CacheSettings.in(dir).toBuilder().signingKey(tmp.resolve("key"))
        .lockStale(java.time.Duration.ofSeconds(60)).lockWait(java.time.Duration.ofSeconds(2)).build());
    Path lock = dir.resolve("locks/" + KEY + ".lock");
    Files.write(lock, new byte[0]); // what a full disk left: the name, without the holder
    long t0 = System.nanoTime();
    try (LockFile l = cache.lock(KEY)) {
      assertNotNull(l, "taken over, not waited out (" + (System.nanoTime() - t0) / 1_000_000 + " ms)");
      assertTrue(LockFile.Holder.parse(Files.readString(lock)).pid() > 0, "a lock is written whole");
    }
    try (var s = Files.list(dir.resolve("locks"))) {
      assertEquals(0, s.count(), "no lock and no temporary file left");
    }
  }

  @Test
  void gcAndLsBesideEvictionNeverFailOnAVanishedEntry(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("c");
    CacheSettings s = CacheSettings.in(dir).toBuilder().signingKey(tmp.resolve("key")).build();
    KernelCache.open(s);
    for (int round = 0; round < 3; round++) {
      for (int i = 0; i < 1000; i++) {
        Path f = dir.resolve("entries/" + HexFormat.of().toHexDigits(round * 10_000L + i) + "0".repeat(48) + ".kbin");
        Files.write(f, new byte[64]);
        Files.setLastModifiedTime(f, FileTime.fromMillis(i * 1000L));
      }
      KernelCache admin = KernelCache.openForAdmin(s, dir, true);
      CountDownLatch go = new CountDownLatch(1);
      Thread evictor = new Thread(() -> {
        try {
          go.await();
          try (var files = Files.list(dir.resolve("entries"))) {
            for (Path f : files.toList()) {
              Files.deleteIfExists(f);
            }
          }
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      });
      evictor.start();
      go.countDown();
      if (round % 2 == 0) {
        admin.gc(0, null);
      } else {
        admin.list();
      }
      evictor.join();
    }
  }

  @Test
  void aSigningKeyOthersCanReadIsRefusedSayingWhatToRun(@TempDir Path tmp) throws Exception {
    Path key = tmp.resolve("key");
    EntrySigning.open(key, null);
    Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-r--r--"));
    String text = stderrOf(() -> {
      KernelCache cache = KernelCache.open(CacheSettings.in(tmp.resolve("c")).toBuilder().signingKey(key).build());
      assertNull(cache.lookup(KEY));
      assertFalse(cache.store(KEY, envelope(10)));
    });
    assertTrue(text.contains("mode rw-r--r--") && text.contains("chmod 600 " + key), text);

    Path linked = tmp.resolve("linked-key");
    Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-------"));
    Files.createSymbolicLink(linked, key);
    text = stderrOf(() -> KernelCache.open(CacheSettings.in(tmp.resolve("c")).toBuilder()
        .signingKey(linked).build()).store(KEY, envelope(10)));
    assertTrue(text.contains(linked + " is a symbolic link"), text);
  }

  /** A uid without a passwd entry has user.name '?': its own private directories are still its own. */
  @Test
  void aUserWithoutAPasswdEntryUsesItsOwnPrivateDirectories(@TempDir Path tmp) throws Exception {
    String name = System.getProperty("user.name");
    System.setProperty("user.name", "?");
    try {
      KernelCache cache = KernelCache.open(CacheSettings.in(tmp.resolve("c")).toBuilder()
          .signingKey(tmp.resolve("key")).build());
      assertNull(cache.writeRefusal());
      assertTrue(cache.store(KEY, envelope(10)));
      assertNotNull(cache.lookup(KEY));
      String tmpdir = System.getProperty("java.io.tmpdir");
      System.setProperty("java.io.tmpdir", tmp.toString());
      try {
        Path own = org.mpibuild.support.NativeLibraries.privateDirectory(); // refused as "not yours" when names were compared
        if (System.getenv("XDG_RUNTIME_DIR") == null) {
          assertEquals(tmp.resolve("mpi-build-" + Ownership.processUid()), own, "named by uid, as '?' is shared");
        }
      } finally {
        System.setProperty("java.io.tmpdir", tmpdir);
      }
    } finally {
      System.setProperty("user.name", name);
    }
    assertEquals(Ownership.processUid(), Ownership.uid(Files.createTempFile(tmp, "probe", "")));
  }

  /** Without a passwd entry the JDK sets user.home to '?': the cache, key and trust file go under $HOME. */
  @Test
  void aUserWithoutAPasswdEntryKeepsItsFilesUnderHome() {
    java.util.Properties props = new java.util.Properties();
    props.setProperty("user.home", "?");
    props.setProperty("user.name", "?");
    CacheSettings s = CacheSettings.from(org.mpibuild.spi.SettingSource.of(props, java.util.Map.of("HOME", "/home/54321")));
    assertEquals(Path.of("/home/54321/.cache/mpi-build"), s.dir());
    assertEquals(Path.of("/home/54321/.config/mpi-build/signing-key"), s.signingKey());
    assertEquals(Path.of("/home/54321/.config/mpi-build/trusted-keys"), s.trustedKeys());
  }

  private static String stderrOf(Runnable r) {
    PrintStream err = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      r.run();
    } finally {
      System.setErr(err);
    }
    return captured.toString(StandardCharsets.UTF_8);
  }
}
