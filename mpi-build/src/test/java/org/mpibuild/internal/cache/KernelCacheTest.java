package org.mpibuild.internal.cache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.internal.settings.CacheSettings;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.internal.wire.Payload;

public class KernelCacheTest {
  static final String KEY = "ab".repeat(32);
  static final String OTHER = "cd".repeat(32);

  public static Envelope envelope(int size) {
    byte[] b = new byte[size];
    for (int i = 0; i < size; i++) {
      b[i] = (byte) (i * 7);
    }
    return Envelope.ok(Envelope.Metadata.built("fake", "device A", List.of("k"), "-O2", "", "", ""), Payload.copyOf(b));
  }

  static List<Path> files(Path dir) throws Exception {
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(Files::isRegularFile).sorted().toList();
    }
  }

  @Test
  void storedEntryIsOneWholeFileAndReadsBack(@TempDir Path tmp) throws Exception {
    KernelCache cache = KernelCache.open(CacheSettings.in(tmp.resolve("c")));
    assertTrue(cache.store(KEY, envelope(1000)));
    assertEquals(List.of(tmp.resolve("c/CACHEDIR.TAG"), tmp.resolve("c/entries/" + KEY + ".kbin")), files(tmp.resolve("c")),
        "one entry file and no temporary leftovers");
    KernelCache.Entry e = cache.lookup(KEY);
    assertNotNull(e);
    assertArrayEquals(envelope(1000).payload().toByteArray(), e.envelope().payload().toByteArray());
    assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(tmp.resolve("c"))));
    assertNull(cache.lookup(OTHER));
  }

  @Test
  void flippedByteIsDetectedAndMovedAside(@TempDir Path tmp) throws Exception {
    KernelCache cache = KernelCache.open(CacheSettings.in(tmp));
    cache.store(KEY, envelope(1000));
    Path f = tmp.resolve("entries/" + KEY + ".kbin");
    byte[] b = Files.readAllBytes(f);
    b[b.length - 10] ^= 0x01;
    Files.write(f, b);
    assertNull(cache.lookup(KEY), "a corrupt entry must never be returned");
    assertFalse(Files.exists(f), "the corrupt entry is moved aside");
    assertEquals(1, cache.quarantined());
    assertTrue(cache.store(KEY, envelope(1000)));
    assertNotNull(cache.lookup(KEY), "rebuilt");
  }

  @Test
  void truncatedEntryIsDetected(@TempDir Path tmp) throws Exception {
    KernelCache cache = KernelCache.open(CacheSettings.in(tmp));
    cache.store(KEY, envelope(1000));
    Path f = tmp.resolve("entries/" + KEY + ".kbin");
    byte[] b = Files.readAllBytes(f);
    Files.write(f, java.util.Arrays.copyOf(b, b.length - 300));
    assertNull(cache.lookup(KEY));
    assertEquals(1, cache.quarantined());
    Files.write(f, java.util.Arrays.copyOf(b, 20));
    assertNull(cache.lookup(KEY));
    assertEquals(2, cache.quarantined());
  }

  @Test
  void entryRenamedToAnotherKeyIsRefused(@TempDir Path tmp) throws Exception {
    KernelCache cache = KernelCache.open(CacheSettings.in(tmp));
    cache.store(KEY, envelope(100));
    Files.copy(tmp.resolve("entries/" + KEY + ".kbin"), tmp.resolve("entries/" + OTHER + ".kbin"));
    assertNull(cache.lookup(OTHER), "an entry's own key must match the file it is read for");
    assertNotNull(cache.lookup(KEY));
  }

  @Test
  void readOnlyCacheGivesHitsAndNeverWrites(@TempDir Path tmp) throws Exception {
    KernelCache.open(CacheSettings.in(tmp)).store(KEY, envelope(100));
    Path entry = tmp.resolve("entries/" + KEY + ".kbin");
    FileTime before = FileTime.fromMillis(1_000_000_000_000L);
    Files.setLastModifiedTime(entry, before);
    List<Path> filesBefore = files(tmp);
    KernelCache ro = KernelCache.open(CacheSettings.in(tmp).toBuilder().access(CacheSettings.Access.READ_ONLY).build());
    assertNotNull(ro.lookup(KEY));
    assertFalse(ro.store(OTHER, envelope(100)));
    assertNull(ro.lock(OTHER), "read-only never locks");
    assertEquals(filesBefore, files(tmp));
    assertEquals(before, Files.getLastModifiedTime(entry), "not even the last-use time is written");
  }

  @Test
  void worldWritableDirectoryIsRefusedForWritingUnlessShared(@TempDir Path tmp) throws Exception {
    Path dir = Files.createDirectory(tmp.resolve("open"));
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
    KernelCache cache = KernelCache.open(CacheSettings.in(dir));
    assertFalse(cache.writable());
    assertTrue(cache.writeRefusal().contains("world-writable (rwxrwxrwx)"), cache.writeRefusal());
    assertTrue(cache.writeRefusal().contains("MPI_BUILD_CACHE_SHARED"), cache.writeRefusal());
    assertFalse(cache.store(KEY, envelope(10)));
    assertEquals(List.of(), files(dir));
    KernelCache shared = KernelCache.open(CacheSettings.in(dir).toBuilder().shared(true).build());
    assertTrue(shared.writable());
    assertTrue(shared.store(KEY, envelope(10)));
  }

  @Test
  void groupWritableDirectoryIsRefusedToo(@TempDir Path tmp) throws Exception {
    Path dir = Files.createDirectory(tmp.resolve("group"));
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwx---"));
    assertTrue(KernelCache.open(CacheSettings.in(dir)).writeRefusal().contains("group-writable"));
  }

  @Test
  void evictionKeepsTheMostRecentlyUsedWithinTheLimit(@TempDir Path tmp) throws Exception {
    long entryBytes;
    KernelCache probe = KernelCache.open(CacheSettings.in(tmp.resolve("probe")));
    probe.store(KEY, envelope(1000));
    entryBytes = Files.size(tmp.resolve("probe/entries/" + KEY + ".kbin"));
    KernelCache cache = KernelCache.open(CacheSettings.in(tmp.resolve("c")).toBuilder()
        .maxBytes(3 * entryBytes).build());
    String[] keys = new String[5];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = String.format("%064x", i + 1);
    }
    for (int i = 0; i < 3; i++) {
      cache.store(keys[i], envelope(1000));
      Files.setLastModifiedTime(tmp.resolve("c/entries/" + keys[i] + ".kbin"), FileTime.fromMillis(1_000_000L * (i + 1)));
    }
    assertNotNull(cache.lookup(keys[0]), "using entry 0 makes it the most recently used");
    Thread.sleep(20);
    cache.store(keys[3], envelope(1000));
    cache.store(keys[4], envelope(1000));
    List<String> left = cache.list().stream().map(KernelCache.Listing::key).sorted().toList();
    assertEquals(List.of(keys[0], keys[3], keys[4]), left, "the least recently used (1, then 2) were evicted");
    long total = cache.list().stream().mapToLong(KernelCache.Listing::bytes).sum();
    assertTrue(total <= 3 * entryBytes);
  }

  @Test
  void negativeEntriesExpire(@TempDir Path tmp) throws Exception {
    KernelCache off = KernelCache.open(CacheSettings.in(tmp.resolve("a")));
    Envelope failure = Envelope.failure(Envelope.Status.COMPILE_FAILED,
        Envelope.Metadata.failed("fake", "device A", List.of(), "", "error: x", "compile failed", ""));
    assertFalse(off.store(KEY, failure), "without a negative TTL, failures are not cached");
    KernelCache neg = KernelCache.open(CacheSettings.in(tmp.resolve("b")).toBuilder()
        .negativeTtl(java.time.Duration.ofSeconds(30)).build());
    assertTrue(neg.store(KEY, failure));
    assertEquals("error: x", neg.lookup(KEY).envelope().metadata().buildLog());
    Files.setLastModifiedTime(tmp.resolve("b/entries/" + KEY + ".kbin"),
        FileTime.fromMillis(System.currentTimeMillis() - 60_000));
    assertNull(neg.lookup(KEY), "an expired negative entry is a miss");
  }

  @Test
  void gcAndClear(@TempDir Path tmp) throws Exception {
    KernelCache cache = KernelCache.open(CacheSettings.in(tmp));
    cache.store(KEY, envelope(100));
    cache.store(OTHER, envelope(100));
    Files.setLastModifiedTime(tmp.resolve("entries/" + KEY + ".kbin"), FileTime.fromMillis(1000));
    assertEquals(1, cache.gc(Long.MAX_VALUE, java.time.Duration.ofDays(1)).size());
    assertEquals(List.of(OTHER), cache.list().stream().map(KernelCache.Listing::key).toList());
    assertEquals(1, cache.clear());
    assertEquals(0, cache.list().size());
  }

  @Test
  void hugeFileAtAnEntrysPathIsRefusedBeforeItIsReadAndMovedAside(@TempDir Path tmp) throws Exception {
    KernelCache cache = KernelCache.open(CacheSettings.in(tmp));
    Path f = tmp.resolve("entries/" + KEY + ".kbin");
    try (java.io.RandomAccessFile r = new java.io.RandomAccessFile(f.toFile(), "rw")) {
      r.setLength(3L << 30); // 3 GiB, sparse: reading it whole would exhaust the heap
    }
    long t0 = System.nanoTime();
    assertNull(cache.lookup(KEY));
    assertTrue(System.nanoTime() - t0 < 5_000_000_000L, "refused from its first bytes");
    assertFalse(Files.exists(f), "moved to the quarantine");
    assertEquals(1, cache.quarantined());
  }

  @Test
  void entryLargerThanTheConfiguredMaximumIsRefused(@TempDir Path tmp) throws Exception {
    KernelCache cache = KernelCache.open(CacheSettings.in(tmp));
    assertTrue(cache.store(KEY, envelope(5000)));
    assertNull(cache.lookup(KEY, 4000), "a 5000-byte binary over a 4000-byte maximum");
    assertEquals(1, cache.quarantined());
  }

  @Test
  void plantedLinkIsNeverFollowedNorItsTargetTouched(@TempDir Path tmp) throws Exception {
    KernelCache cache = KernelCache.open(CacheSettings.in(tmp.resolve("c")));
    Path outside = tmp.resolve("precious.kbin");
    KernelCache donor = KernelCache.open(CacheSettings.in(tmp.resolve("donor")));
    donor.store(KEY, envelope(100));
    Files.copy(tmp.resolve("donor/entries/" + KEY + ".kbin"), outside);
    FileTime before = FileTime.fromMillis(1_000_000_000_000L);
    Files.setLastModifiedTime(outside, before);
    Files.createSymbolicLink(tmp.resolve("c/entries/" + KEY + ".kbin"), outside);
    assertNull(cache.lookup(KEY), "an entry reached through a link is not the cache's own");
    assertEquals(before, Files.getLastModifiedTime(outside), "the link's target was not touched");
    assertTrue(Files.exists(outside));
    assertFalse(Files.exists(tmp.resolve("c/entries/" + KEY + ".kbin"), java.nio.file.LinkOption.NOFOLLOW_LINKS));
  }

  @Test
  void cacheDirectoryGivenAsALinkIsJudgedByItsPrivateTarget(@TempDir Path tmp) throws Exception {
    Path target = tmp.resolve("private");
    Files.createDirectories(target);
    Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rwx------"));
    Path link = Files.createSymbolicLink(tmp.resolve("link"), target);
    KernelCache cache = KernelCache.open(CacheSettings.in(link));
    assertNull(cache.writeRefusal(), "the link's own mode (rwxrwxrwx) says nothing about the directory");
    assertTrue(cache.store(KEY, envelope(100)));
    assertNotNull(cache.lookup(KEY));
  }

  @Test
  void entryForgedWithAValidFormatAndChecksumIsNeverLoaded(@TempDir Path tmp) throws Exception {
    KernelCache cache = KernelCache.open(CacheSettings.in(tmp.resolve("c")).toBuilder()
        .signingKey(tmp.resolve("mine")).build());
    assertTrue(cache.store(KEY, envelope(1000)));
    // The forger writes another binary under the same key, with a correct SHA-256 and header CRC, unsigned.
    Path f = tmp.resolve("c/entries/" + KEY + ".kbin");
    Files.write(f, EntryCodec.encode(KEY, envelope(999).toBytes()));
    assertNull(cache.lookup(KEY), "an unsigned entry is never loaded");
    assertEquals(1, cache.untrustedEntries());
    assertEquals(1, cache.quarantined(), "moved aside, to be rebuilt");
  }

  @Test
  void entriesSignedByAnotherKeyNeedTheReadersOwnTrust(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("group-cache");
    KernelCache alice = KernelCache.open(CacheSettings.in(dir).toBuilder().signingKey(tmp.resolve("alice"))
        .trustedKeys(tmp.resolve("alice-trusted")).build());
    assertTrue(alice.store(KEY, envelope(1000)));
    CacheSettings bobs = CacheSettings.in(dir).toBuilder()
        .signingKey(tmp.resolve("bob")).trustedKeys(tmp.resolve("bob-trusted")).build();
    java.util.List<KernelCache.Listing> seen = KernelCache.open(bobs).list();
    assertEquals("untrusted", seen.get(0).status(), "bob does not trust alice's key yet: " + seen);
    assertTrue(seen.get(0).problem().contains("not trusted"), seen.get(0).problem());

    // Bob trusts alice's key once, in his own configuration, from her key file's public line.
    assertEquals(1, EntrySigning.trust(tmp.resolve("bob-trusted"), tmp.resolve("alice")).size());
    assertEquals(0, EntrySigning.trust(tmp.resolve("bob-trusted"), tmp.resolve("alice")).size(), "added once");
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(tmp.resolve("bob-trusted"))));
    assertNotNull(KernelCache.open(bobs).lookup(KEY), "alice's entry, now trusted through bob's own trust file");
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(tmp.resolve("bob"))));
  }

  @Test
  void aTrustFileOthersCanWriteIsIgnored(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("c");
    KernelCache alice = KernelCache.open(CacheSettings.in(dir).toBuilder().signingKey(tmp.resolve("alice")).build());
    alice.store(KEY, envelope(100));
    Path trust = tmp.resolve("bob-trusted");
    EntrySigning.trust(trust, tmp.resolve("alice"));
    Files.setPosixFilePermissions(trust, PosixFilePermissions.fromString("rw-rw-rw-"));
    KernelCache bob = KernelCache.open(CacheSettings.in(dir).toBuilder()
        .signingKey(tmp.resolve("bob")).trustedKeys(trust).build());
    assertNull(bob.lookup(KEY), "a world-writable trust file could trust anyone");
  }

  @Test
  void theSealIsHmacSha256AsRfc4231Defines() {
    // RFC 4231, test case 2: key "Jefe", data "what do ya want for nothing?"
    byte[] data = "what do ya want for nothing?".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    assertEquals("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", java.util.HexFormat.of()
        .formatHex(EntrySigning.hmac("Jefe".getBytes(java.nio.charset.StandardCharsets.US_ASCII), data, data.length,
            new byte[0])));
  }

  @Test
  void anEntryNamingYourKeyWithoutYourSealIsRefused(@TempDir Path tmp) throws Exception {
    KernelCache cache = KernelCache.open(CacheSettings.in(tmp.resolve("c")).toBuilder()
        .signingKey(tmp.resolve("mine")).build());
    assertTrue(cache.store(KEY, envelope(1000)));
    Path f = tmp.resolve("c/entries/" + KEY + ".kbin");
    byte[] b = Files.readAllBytes(f);
    b[b.length - 1] ^= 1; // the seal: a forger who copied your public key cannot make it
    Files.write(f, b);
    assertNull(cache.lookup(KEY));
    assertEquals(1, cache.untrustedEntries());
  }

  /** What is not a file of keys is refused naming the file and the problem (was: "Is a directory", "Input length = 1", OutOfMemoryError). */
  @org.junit.jupiter.api.Test
  void trustRefusesWhatIsNotAFileOfKeysNamingIt(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
    Path trust = dir.resolve("trusted");
    java.io.IOException e = assertThrows(java.io.IOException.class, () -> EntrySigning.trust(trust, dir));
    assertEquals(dir + " is not a file of keys: it is a directory", e.getMessage());
    Path random = dir.resolve("random");
    byte[] bytes = new byte[64];
    new java.util.Random(1).nextBytes(bytes);
    bytes[0] = (byte) 0xc3;
    Files.write(random, bytes);
    e = assertThrows(java.io.IOException.class, () -> EntrySigning.trust(trust, random));
    assertTrue(e.getMessage().startsWith(random + " is not a file of keys: byte 0xc3 at offset 0"), e.getMessage());
    e = assertThrows(java.io.IOException.class, () -> EntrySigning.trust(trust, Path.of("/dev/zero")));
    assertEquals("/dev/zero is not a file of keys: it is not a regular file (a device, a pipe or a socket)", e.getMessage());
    Path big = dir.resolve("big");
    Files.write(big, new byte[EntrySigning.MAX_KEY_FILE_BYTES + 1]);
    e = assertThrows(java.io.IOException.class, () -> EntrySigning.trust(trust, big));
    assertTrue(e.getMessage().contains("has " + (EntrySigning.MAX_KEY_FILE_BYTES + 1) + " bytes"), e.getMessage());
    e = assertThrows(java.io.IOException.class, () -> EntrySigning.trust(trust, dir.resolve("absent")));
    assertEquals(dir.resolve("absent") + ": no such file", e.getMessage());
    assertFalse(Files.exists(trust), "nothing was trusted");
  }
}
