package org.mpibuild.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.mpibuild.Kernel;
import org.mpibuild.MpiBuild;
import org.mpibuild.testkit.FakeBackend;

/**
 * {@code mpi-build cache ...} on a temporary cache made by the library (docs/cli.md): exit codes 0 ok, 1
 * failure, 2 usage; the {@code --json} shapes; the refusals (no cache, an untagged directory, a linked tag,
 * nonsense sizes and ages, a directory others may write); links and strays left alone.
 */
class CacheCommandTest {
  static final String KEY = "[0-9a-f]{64}";

  @TempDir
  Path tmp;
  Path cache;

  /** A real cache with two entries, made by the library with the kit's fake backend. */
  @BeforeEach
  void makeCache() {
    cache = tmp.resolve("cache");
    FakeBackend.cacheWith(cache, "__kernel void k() {}", "__kernel void j() {}");
  }

  Cli.Run cache(String... args) {
    String[] all = new String[args.length + 3];
    all[0] = "cache";
    System.arraycopy(args, 0, all, 1, args.length);
    all[args.length + 1] = "--dir";
    all[args.length + 2] = cache.toString();
    return Cli.run(all);
  }

  static List<Path> entries(Path cache) throws Exception {
    try (Stream<Path> s = Files.list(cache.resolve("entries"))) {
      return s.toList();
    }
  }

  @Test
  void cacheAloneShowsItsSubCommands() {
    Cli.Run r = Cli.run("cache");
    assertEquals(0, r.exit(), r.all());
    for (String sub : new String[] {"stats", "ls", "verify", "gc", "clear"}) {
      assertTrue(r.out().contains(sub), sub + "\n" + r.all());
    }
  }

  // --- --json shapes

  @Test
  void statsJsonIsOneObjectWithTheDocumentedFields() throws Exception {
    Cli.Run r = cache("stats", "--json");
    assertEquals(0, r.exit(), r.all());
    List<JsonNode> lines = r.json();
    assertEquals(1, lines.size(), r.all());
    JsonNode o = lines.get(0);
    assertEquals(cache.toString(), o.get("dir").asText(), r.all());
    assertTrue(o.get("entries").isIntegralNumber() && o.get("entries").asInt() == 2, r.all());
    long bytes = Files.size(entries(cache).get(0)) + Files.size(entries(cache).get(1));
    assertTrue(o.get("bytes").isIntegralNumber() && o.get("bytes").asLong() == bytes, r.all());
    assertTrue(o.get("max_bytes").isIntegralNumber() && o.get("max_bytes").asLong() > 0, r.all());
    for (String count : new String[] {"negative_entries", "corrupt_entries", "quarantined"}) {
      assertTrue(o.get(count).isIntegralNumber() && o.get(count).asLong() == 0, count + "\n" + r.all());
    }
    assertTrue(o.get("locks").isArray() && o.get("locks").isEmpty(), r.all());
    Instant oldest = Instant.parse(o.get("oldest_use").asText());
    Instant newest = Instant.parse(o.get("newest_use").asText());
    assertFalse(oldest.isAfter(newest), r.all());
    assertTrue(o.get("writable").isBoolean() && o.get("writable").asBoolean(), r.all());
  }

  @Test
  void statsJsonOfAnEmptyCacheHasNullUses() {
    assertEquals(0, cache("clear").exit());
    Cli.Run r = cache("stats", "--json");
    assertEquals(0, r.exit(), r.all());
    JsonNode o = r.json().get(0);
    assertEquals(0, o.get("entries").asInt(), r.all());
    assertEquals(0, o.get("bytes").asLong(), r.all());
    assertTrue(o.get("oldest_use").isNull() && o.get("newest_use").isNull(), r.all());
  }

  @Test
  void lsJsonIsOneObjectPerEntryWithTheDocumentedFields() throws Exception {
    Cli.Run r = cache("ls", "--json");
    assertEquals(0, r.exit(), r.all());
    List<JsonNode> lines = r.json();
    assertEquals(2, lines.size(), r.all());
    Instant previous = Instant.MAX;
    for (JsonNode o : lines) {
      assertTrue(o.get("key").isTextual() && o.get("key").asText().matches(KEY), r.all());
      assertTrue(Files.isRegularFile(cache.resolve("entries").resolve(o.get("key").asText() + ".kbin")), r.all());
      assertEquals("fake", o.get("backend").asText(), r.all());
      assertEquals("fake-device", o.get("target").asText(), r.all());
      assertTrue(o.get("kernels").isArray(), r.all());
      o.get("kernels").forEach(k -> assertTrue(k.isTextual(), r.all()));
      assertTrue(o.get("bytes").isIntegralNumber() && o.get("bytes").asLong() > 0, r.all());
      Instant lastUse = Instant.parse(o.get("last_use").asText());
      assertFalse(lastUse.isAfter(previous), "most recent first\n" + r.all());
      previous = lastUse;
      assertEquals("ok", o.get("status").asText(), r.all());
    }
  }

  @Test
  void lsWithoutJsonPrintsALinePerEntry() {
    Cli.Run r = cache("ls");
    assertEquals(0, r.exit(), r.all());
    assertEquals(2, r.out().lines().filter(l -> !l.isBlank()).count(), r.all());
    assertTrue(r.out().contains("fake"), r.all());
  }

  // --- verify

  @Test
  void verifyExitsOneOnABadEntryAndZeroOnceItIsRemoved() throws Exception {
    assertEquals(0, cache("verify").exit());
    Path entry = entries(cache).get(0);
    byte[] bytes = Files.readAllBytes(entry);
    bytes[bytes.length - 1] ^= 1;
    Files.write(entry, bytes);
    Cli.Run bad = cache("verify");
    assertEquals(1, bad.exit(), bad.all());
    String key = entry.getFileName().toString().replace(".kbin", "");
    assertTrue(bad.out().contains(key), "names the bad entry\n" + bad.all());
    assertTrue(Files.exists(entry), "verify alone removes nothing");
    Cli.Run removed = cache("verify", "--remove");
    assertEquals(0, removed.exit(), removed.all());
    assertFalse(Files.exists(entry), "moved aside");
    Cli.Run after = cache("verify");
    assertEquals(0, after.exit(), after.all());
    assertEquals(1, cache("stats", "--json").json().get(0).get("entries").asInt());
  }

  @Test
  void aCorruptEntryIsCountedByStats() throws Exception {
    Path entry = entries(cache).get(0);
    Files.write(entry, new byte[] {1, 2, 3});
    JsonNode o = cache("stats", "--json").json().get(0);
    assertEquals(1, o.get("corrupt_entries").asInt(), o.toString());
  }

  // --- gc and clear

  @Test
  void gcToZeroBytesRemovesEveryEntry() throws Exception {
    Cli.Run r = cache("gc", "--max-size", "0");
    assertEquals(0, r.exit(), r.all());
    assertEquals(List.of(), entries(cache));
    assertTrue(Files.exists(cache.resolve("CACHEDIR.TAG")), "the cache stays a cache");
  }

  @Test
  void gcKeepsWhatIsUnderItsLimits() throws Exception {
    Cli.Run r = cache("gc", "--max-size", "500m", "--max-age", "30d");
    assertEquals(0, r.exit(), r.all());
    assertEquals(2, entries(cache).size());
    Cli.Run plain = cache("gc");
    assertEquals(0, plain.exit(), plain.all());
    assertEquals(2, entries(cache).size());
  }

  @Test
  void gcByAgeRemovesEntriesUnusedForLonger() throws Exception {
    Files.setLastModifiedTime(entries(cache).get(0), java.nio.file.attribute.FileTime.from(
        Instant.now().minus(java.time.Duration.ofDays(40))));
    Cli.Run r = cache("gc", "--max-age", "30d");
    assertEquals(0, r.exit(), r.all());
    assertEquals(1, cache("stats", "--json").json().get(0).get("entries").asInt(), r.all());
  }

  @Test
  void clearRemovesEveryEntryAndKeepsTheDirectory() throws Exception {
    Cli.Run r = cache("clear");
    assertEquals(0, r.exit(), r.all());
    assertEquals(List.of(), entries(cache));
    assertTrue(Files.isDirectory(cache));
  }

  @ParameterizedTest(name = "--max-size {0}")
  @ValueSource(strings = {"lots", "-1", "5x", "", "99999999999e"})
  void aSizeThatIsNotOneIsAUsageErrorNamingIt(String size) throws Exception {
    Cli.Run r = cache("gc", "--max-size", size);
    assertEquals(2, r.exit(), r.all());
    assertTrue(r.err().contains("--max-size") && r.err().contains("'" + size + "'"), r.all());
    assertEquals(2, entries(cache).size(), "nothing removed");
  }

  @ParameterizedTest(name = "--max-age {0}")
  @ValueSource(strings = {"forever", "-5d", "3 weeks", "99999999d"})
  void anAgeThatIsNotOneIsAUsageErrorNamingIt(String age) throws Exception {
    Cli.Run r = cache("gc", "--max-age", age);
    assertEquals(2, r.exit(), r.all());
    assertTrue(r.err().contains("--max-age") && r.err().contains("'" + age + "'"), r.all());
    assertEquals(2, entries(cache).size(), "nothing removed");
  }

  // --- refusals: what is not provably the cache's own is never touched

  @ParameterizedTest(name = "cache {0}")
  @ValueSource(strings = {"stats", "ls", "verify", "gc", "clear"})
  void aDirectoryThatDoesNotExistIsAFailureAndIsNotCreated(String sub) {
    Path missing = tmp.resolve("missing");
    Cli.Run r = Cli.run("cache", sub, "--dir", missing.toString());
    assertEquals(1, r.exit(), r.all());
    assertTrue(r.err().contains(missing.toString()), "names the directory\n" + r.all());
    assertFalse(Files.exists(missing), "a cache command creates nothing");
  }

  @ParameterizedTest(name = "cache {0}")
  @ValueSource(strings = {"stats", "ls", "verify", "gc", "clear"})
  void anUntaggedDirectoryIsRefusedAndLeftAlone(String sub) throws Exception {
    Path home = tmp.resolve("home");
    Files.createDirectories(home.resolve("entries"));
    Path thesis = home.resolve("entries").resolve("ab".repeat(32) + ".kbin");
    Files.writeString(thesis, "years of work");
    Cli.Run r = Cli.run("cache", sub, "--dir", home.toString());
    assertEquals(1, r.exit(), r.all());
    assertTrue(r.err().contains(home.toString()) && r.err().contains("CACHEDIR.TAG"), r.all());
    assertEquals("years of work", Files.readString(thesis));
    try (Stream<Path> s = Files.list(home)) {
      assertEquals(List.of(home.resolve("entries")), s.toList(), "a cache command creates nothing");
    }
  }

  @Test
  void aRegularFileIsNoCache() throws Exception {
    Path file = tmp.resolve("plain-file");
    Files.writeString(file, "x");
    Cli.Run r = Cli.run("cache", "clear", "--dir", file.toString());
    assertEquals(1, r.exit(), r.all());
    assertTrue(r.err().contains(file.toString()), r.all());
    assertEquals("x", Files.readString(file));
  }

  @Test
  void aTagThatIsALinkDoesNotMakeACache() throws Exception {
    Path other = tmp.resolve("other");
    Files.createDirectories(other.resolve("entries"));
    Path entry = other.resolve("entries").resolve("cd".repeat(32) + ".kbin");
    Files.writeString(entry, "not the cache's");
    Files.createSymbolicLink(other.resolve("CACHEDIR.TAG"), cache.resolve("CACHEDIR.TAG"));
    Cli.Run r = Cli.run("cache", "clear", "--dir", other.toString());
    assertEquals(1, r.exit(), r.all());
    assertTrue(Files.exists(entry), "nothing removed");
  }

  @Test
  void linksAndStrayFilesInTheCacheAreListedButNeverFollowedOrRemoved() throws Exception {
    Path precious = tmp.resolve("precious");
    Files.writeString(precious, "not the cache's");
    Path link = cache.resolve("entries").resolve("ef".repeat(32) + ".kbin");
    Files.createSymbolicLink(link, precious);
    Path stray = cache.resolve("entries").resolve("README.kbin");
    Files.writeString(stray, "hello");
    Cli.Run ls = cache("ls", "--json");
    assertEquals(0, ls.exit(), ls.all());
    assertEquals(4, ls.json().size(), "two entries, the link, the stray file\n" + ls.all());
    assertEquals(0, cache("verify", "--remove").exit());
    assertEquals(0, cache("gc", "--max-size", "0").exit());
    assertEquals(0, cache("clear").exit());
    assertTrue(Files.isSymbolicLink(link), "the link is left");
    assertEquals("not the cache's", Files.readString(precious), "its target is untouched");
    assertEquals("hello", Files.readString(stray), "a file the cache never writes is left");
  }

  @Test
  void aDirectoryOthersMayWriteIsReadButNeverWritten() throws Exception {
    Files.setPosixFilePermissions(cache, PosixFilePermissions.fromString("rwxrwxrwx"));
    Cli.Run stats = cache("stats", "--json");
    assertEquals(0, stats.exit(), stats.all());
    assertFalse(stats.json().get(0).get("writable").asBoolean(), stats.all());
    assertEquals(0, cache("ls").exit());
    assertEquals(0, cache("verify").exit(), "verify without --remove only reads");
    for (String[] write : new String[][] {{"clear"}, {"gc", "--max-size", "0"}, {"verify", "--remove"}}) {
      Cli.Run r = cache(write);
      assertEquals(1, r.exit(), String.join(" ", write) + "\n" + r.all());
      assertFalse(r.err().isBlank(), "says why\n" + r.all());
      assertEquals(2, entries(cache).size(), String.join(" ", write) + " removed nothing");
    }
    assertTrue(Files.isDirectory(cache, LinkOption.NOFOLLOW_LINKS));
  }
}
