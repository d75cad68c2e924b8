package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.mpibuild.it.CacheCliIT.cli;

import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.Kernel;
import org.mpibuild.MpiBuild;
import org.mpibuild.it.CacheCliIT.Run;
import org.mpibuild.testkit.FakeBackend;

/**
 * The cache commands act only on what is provably the cache's own: a tagged directory, regular files with
 * the cache's names; they never follow a link, never create a cache, and refuse nonsense arguments.
 */
class CacheCliSafetyIT {
  @TempDir
  Path tmp;
  Path cache;

  /** A real cache with one entry, made by the library. */
  @BeforeEach
  void makeCache() {
    cache = tmp.resolve("cache");
    FakeBackend.cacheWith(cache, "__kernel void k() {}");
  }

  @Test
  void anUntaggedDirectoryIsNeverTakenForACache() throws Exception {
    Path home = tmp.resolve("home");
    for (String sub : new String[] {"entries", "locks", "quarantine"}) {
      Files.createDirectories(home.resolve(sub));
      Files.writeString(home.resolve(sub).resolve("thesis.tex"), "years of work");
    }
    Run r = cli("clear", "--dir", home.toString());
    assertEquals(1, r.exit(), r.all());
    assertTrue(r.err().contains("not an mpi-build kernel cache"), r.all());
    for (String sub : new String[] {"entries", "locks", "quarantine"}) {
      assertTrue(Files.exists(home.resolve(sub).resolve("thesis.tex")), sub + "/thesis.tex must survive");
    }
    Path empty = tmp.resolve("empty");
    Files.createDirectories(empty);
    Run stats = cli("stats", "--dir", empty.toString());
    assertEquals(1, stats.exit(), stats.all());
    try (var s = Files.list(empty)) {
      assertEquals(0, s.count(), "a cache command creates nothing");
    }
    Path file = tmp.resolve("plain-file");
    Files.writeString(file, "x");
    Run f = cli("ls", "--dir", file.toString());
    assertEquals(1, f.exit(), f.all());
    assertTrue(f.err().contains("regular file"), f.all());
  }

  @Test
  void plantedLinksAndStrayFilesAreListedAndLeftAlone() throws Exception {
    Path outside = tmp.resolve("precious");
    Files.writeString(outside, "not the cache's");
    Path link = cache.resolve("entries").resolve("ab".repeat(32) + ".kbin");
    Files.createSymbolicLink(link, outside);
    Path stray = cache.resolve("entries/README.kbin");
    Files.writeString(stray, "hello");
    Run ls = cli("ls", "--dir", cache.toString());
    assertEquals(0, ls.exit(), ls.all());
    assertEquals(3, ls.out().lines().count(), "the real entry, the link and the stray file\n" + ls.all());
    assertTrue(ls.out().contains("README.kbin") && ls.out().contains("foreign") && ls.out().contains(" ok "),
        ls.all());
    Run gc = cli("gc", "--max-size", "0", "--dir", cache.toString());
    assertEquals(0, gc.exit(), gc.all());
    Run clear = cli("clear", "--dir", cache.toString());
    assertEquals(0, clear.exit(), clear.all());
    assertEquals("not the cache's", Files.readString(outside), "the link's target survives");
    assertTrue(Files.exists(link, LinkOption.NOFOLLOW_LINKS), "a link is not the cache's to delete");
    assertTrue(Files.exists(stray), "a stray file is not the cache's to delete");
  }

  @Test
  void negativeOrOverflowingSizesAndAgesAreUsageErrors() throws Exception {
    for (String[] args : new String[][] {{"--max-size", "-5"}, {"--max-age", "-1d"},
        {"--max-age", "99999999999999999d"}, {"--max-size", "99999999999999t"}}) {
      Run r = cli("gc", args[0], args[1], "--dir", cache.toString());
      assertEquals(2, r.exit(), String.join(" ", args) + "\n" + r.all());
      assertTrue(r.err().contains(args[0] + " '" + args[1] + "'"), r.all());
    }
    Run ls = cli("ls", "--dir", cache.toString());
    assertEquals(1, ls.out().lines().count(), "the entry is still there\n" + ls.all());
  }

  @Test
  void theRootDirectoryIsNoCacheAndGetsNothingCreated() throws Exception {
    Run r = cli("stats", "--dir", "/");
    assertEquals(1, r.exit(), r.all());
    assertTrue(r.err().contains("not an mpi-build kernel cache"), r.all());
    assertFalse(Files.exists(Path.of("/entries")) || Files.exists(Path.of("/CACHEDIR.TAG")), "nothing made in /");
  }

  @Test
  void aMemberTrustsAnotherMembersKeyOnceInTheirOwnConfiguration() throws Exception {
    // The entry was signed by this JVM's key (alice's). Bob has his own key and his own trust file.
    java.util.Map<String, String> bob = java.util.Map.of("MPI_BUILD_SIGNING_KEY", tmp.resolve("bob/signing-key").toString(),
        "MPI_BUILD_TRUSTED_KEYS", tmp.resolve("bob/trusted-keys").toString());
    Files.writeString(cache.resolve("trusted-keys"), String.join("\n", Files.readAllLines(
        org.mpibuild.CacheAdmin.signingKey()).stream().filter(l -> l.startsWith("public ")).toList()) + "\n");
    Run before = cli(bob, "ls", "--dir", cache.toString());
    assertEquals(0, before.exit(), before.all());
    assertTrue(before.out().contains("untrusted"), "a cache directory's own trusted-keys is never read\n" + before.all());
    Path alicePub = tmp.resolve("alice.pub");
    Files.writeString(alicePub, Files.readAllLines(org.mpibuild.CacheAdmin.signingKey()).stream()
        .filter(l -> l.startsWith("public ")).findFirst().orElseThrow().substring(7) + "  # alice\n");
    Run trust = cli(bob, "trust", alicePub.toString());
    assertEquals(0, trust.exit(), trust.all());
    assertTrue(trust.out().contains("trusted 1 new key"), trust.all());
    Run after = cli(bob, "ls", "--dir", cache.toString());
    assertTrue(after.out().contains(" ok ") && !after.out().contains("untrusted"), after.all());
    Run junk = cli(bob, "trust", cache.resolve("CACHEDIR.TAG").toString());
    assertEquals(1, junk.exit(), junk.all());
    assertTrue(junk.err().contains("holds no Ed25519 public key"), junk.all());
  }

  @Test
  void aTagEmptiedByAFullDiskNeverShutsTheCommandsOut() throws Exception {
    Files.write(cache.resolve("CACHEDIR.TAG"), new byte[0]);
    Run ls = cli("ls", "--dir", cache.toString());
    assertEquals(0, ls.exit(), ls.all());
    assertEquals(1, ls.out().lines().count(), ls.all());
    Run gc = cli("gc", "--dir", cache.toString());
    assertEquals(0, gc.exit(), gc.all());
    assertTrue(Files.readString(cache.resolve("CACHEDIR.TAG")).startsWith("Signature: 8a477f597d28d172789f06886806bc55"),
        "mended by a command that writes");
  }
}
