package org.mpibuild.internal.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.internal.settings.CacheSettings;

/** The cache's names are made in one place, and what a cleaning command may delete is exactly those. */
class CacheFilesTest {
  static final String KEY = "0123456789abcdef".repeat(4);
  /** The pattern the cleaning commands used before the names were made in one place: it must not change. */
  static final String OWN_BEFORE = "[0-9a-f]{64}\\.kbin|\\.[0-9a-f]{64}(\\.lock)?\\.\\d+\\.tmp"
      + "|[0-9a-f]{64}\\.lock(\\.\\d+\\.-?\\d+\\.stale)?|[0-9a-f]{64}\\.\\d+\\.\\d+\\.-?\\d+\\.bad";

  @Test
  void theOwnershipPatternIsTheOneTheCommandsAlwaysUsed() {
    assertEquals(OWN_BEFORE, CacheFiles.OWN.pattern());
  }

  @Test
  void theNamesAreTheOnesOnDisk() {
    assertEquals(KEY + ".kbin", CacheFiles.entry(KEY));
    assertEquals(KEY + ".lock", CacheFiles.lock(KEY));
    assertEquals("." + KEY + ".", CacheFiles.temporaryPrefix(KEY));
    assertEquals("." + KEY + ".lock.18446744073709551615.tmp", CacheFiles.temporary(CacheFiles.lock(KEY), -1));
    assertEquals(KEY + ".lock.42.-7.stale", CacheFiles.staleLock(KEY, 42, -7));
    assertEquals(KEY + ".1700000000000.42.-7.bad", CacheFiles.quarantined(KEY, 1_700_000_000_000L, 42, -7));
    assertEquals(".CACHEDIR.TAG.", CacheFiles.temporaryPrefix(CacheFiles.TAG));
    assertEquals(".signing-key.", CacheFiles.temporaryPrefix(CacheFiles.SIGNING_KEY_STEM));
    assertEquals(".trusted-keys.", CacheFiles.temporaryPrefix(CacheFiles.TRUSTED_KEYS_STEM));
    assertEquals(List.of("entries", "locks", "quarantine"),
        List.of(CacheFiles.ENTRIES, CacheFiles.LOCKS, CacheFiles.QUARANTINE));
    assertEquals(KEY, CacheFiles.keyOfEntry(CacheFiles.entry(KEY)));
  }

  /** Every name the cache writes in its sub-directories, for many keys and numbers, extremes included. */
  static List<String> namesMade() {
    Random r = new Random(42);
    List<String> names = new ArrayList<>();
    long[] numbers = {0, 1, -1, Long.MAX_VALUE, Long.MIN_VALUE, r.nextLong(), r.nextLong()};
    for (int i = 0; i < 20; i++) {
      byte[] b = new byte[32];
      r.nextBytes(b);
      String key = i == 0 ? "0".repeat(64) : i == 1 ? "f".repeat(64) : HexFormat.of().formatHex(b);
      names.add(CacheFiles.entry(key));
      names.add(CacheFiles.lock(key));
      for (long n : numbers) {
        names.add(CacheFiles.temporary(key, n));
        names.add(CacheFiles.temporary(CacheFiles.lock(key), n));
        names.add(CacheFiles.staleLock(key, Math.abs(n % 4_000_000), n)); // a pid is positive; a nano time any
        names.add(CacheFiles.quarantined(key, Math.abs(n % 1_000_000_000_000_000L), Math.abs(n % 4_000_000), n));
      }
    }
    return names;
  }

  @Test
  void everyNameTheCacheMakesInItsSubDirectoriesIsItsOwn() {
    for (String name : namesMade()) {
      assertTrue(CacheFiles.own(name), name);
    }
  }

  @Test
  void theKindsOfNameAreTold() {
    assertTrue(CacheFiles.isEntry(CacheFiles.entry(KEY)));
    assertFalse(CacheFiles.isEntry(CacheFiles.lock(KEY)));
    assertFalse(CacheFiles.isEntry(CacheFiles.temporary(KEY, 5)));
    assertTrue(CacheFiles.isTemporary(CacheFiles.temporary(KEY, 5)));
    assertTrue(CacheFiles.isTemporary(CacheFiles.temporary(CacheFiles.lock(KEY), 5)));
    assertFalse(CacheFiles.isTemporary(CacheFiles.entry(KEY)));
    assertFalse(CacheFiles.isTemporary(CacheFiles.temporary(CacheFiles.TAG, 5)));
    assertTrue(CacheFiles.isKey(KEY));
    assertFalse(CacheFiles.isKey(KEY.toUpperCase()));
  }

  @Test
  void nothingElseIsItsOwn() {
    List<String> foreign = List.of("", KEY, "precious.kbin", ".kbin", KEY.toUpperCase() + ".kbin",
        KEY.substring(1) + ".kbin", KEY + "0.kbin", KEY + ".kbin.bak", KEY + ".kbin~", "." + KEY + ".kbin",
        CacheFiles.entry(KEY) + "\n", "../" + CacheFiles.entry(KEY), "entries/" + CacheFiles.entry(KEY),
        CacheFiles.entry(KEY) + ".tmp", "." + KEY + ".tmp", "." + KEY + ".x.tmp", "." + KEY + ".-1.tmp",
        KEY + ".lock.tmp", KEY + ".lock.1.stale", KEY + ".lock.-1.2.stale", KEY + ".lock.1.2.stale.x",
        KEY + ".1.2.bad", KEY + ".-1.2.3.bad", KEY + ".1.2.3.bad.kbin", KEY + ".locks",
        CacheFiles.TAG, CacheFiles.temporary(CacheFiles.TAG, 7), CacheFiles.temporary(CacheFiles.SIGNING_KEY_STEM, 7),
        CacheFiles.temporary(CacheFiles.TRUSTED_KEYS_STEM, 7), CacheFiles.SIGNING_KEY_STEM, CacheFiles.TRUSTED_KEYS_STEM,
        "notes.txt", ".bashrc");
    for (String name : foreign) {
      assertFalse(CacheFiles.own(name), name);
    }
  }

  @Test
  void theTemporaryFilesCreateTempFileMakesAreTheNamesTheCacheOwns(@TempDir Path tmp) throws Exception {
    for (int i = 0; i < 50; i++) {
      for (String stem : List.of(KEY, CacheFiles.lock(KEY))) {
        try (AtomicFile f = AtomicFile.create(tmp.resolve("target"), stem, null, AtomicFile.UNCOUNTED)) {
          String name = f.temporary().getFileName().toString();
          assertTrue(CacheFiles.own(name) && CacheFiles.isTemporary(name), name);
          assertTrue(name.startsWith(CacheFiles.temporaryPrefix(stem)) && name.endsWith(CacheFiles.TEMPORARY_SUFFIX));
          String n = name.substring(CacheFiles.temporaryPrefix(stem).length(),
              name.length() - CacheFiles.TEMPORARY_SUFFIX.length());
          assertEquals(name, CacheFiles.temporary(stem, Long.parseUnsignedLong(n)));
        }
      }
    }
    try (Stream<Path> s = Files.list(tmp)) {
      assertEquals(List.of(), s.toList(), "each temporary file was removed");
    }
  }

  @Test
  void everyFileTheCacheWritesInItsSubDirectoriesIsItsOwnAndClearRemovesThemAll(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("c");
    CacheSettings s = CacheSettings.in(dir).toBuilder().signingKey(tmp.resolve("key"))
        .trustedKeys(tmp.resolve("trusted")).build();
    KernelCache cache = KernelCache.open(s);
    String other = "f".repeat(64);
    assertTrue(cache.store(KEY, KernelCacheTest.envelope(100)));
    assertTrue(cache.store(other, KernelCacheTest.envelope(100)));
    cache.discard(other); // quarantine/
    LockFile lock = cache.lock("e".repeat(64)); // locks/
    assertNotNull(lock);
    CacheDirectory d = CacheDirectory.open(s, dir);
    List<Path> written = new ArrayList<>();
    for (Path sub : List.of(d.entries, d.locks, d.quarantine)) {
      written.addAll(d.filesIn(sub));
    }
    assertEquals(3, written.size(), written.toString());
    for (Path f : written) {
      assertTrue(CacheDirectory.ownFile(f), f.toString());
    }
    Files.writeString(d.entries.resolve("notes.txt"), "mine\n");
    Files.writeString(d.locks.resolve(CacheFiles.temporary(CacheFiles.TAG, 1)), "mine\n");
    assertEquals(3, cache.clear(), "clear removes what the cache wrote");
    assertTrue(Files.exists(d.entries.resolve("notes.txt")), "and nothing else");
    assertTrue(Files.exists(d.locks.resolve(CacheFiles.temporary(CacheFiles.TAG, 1))), "and nothing else");
    lock.close();
  }
}
