package org.mpibuild.internal.cache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.internal.settings.CacheSettings;

/** The one atomic write: whole or nothing under the name, and never a temporary file left behind. */
class AtomicFileTest {
  static final String KEY = "ab".repeat(32);

  /** Counts the calls and the removals of temporary files. */
  static final class Counting implements AtomicFile.Calls {
    int ops;
    final List<Path> discarded = new ArrayList<>();

    @Override
    public void op() {
      ops++;
    }

    @Override
    public void discard(Path temporary) throws IOException {
      discarded.add(temporary);
      AtomicFile.Calls.super.discard(temporary);
    }
  }

  static List<String> names(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  @Test
  void replaceWritesTheWholeFileUnderItsNameAndLeavesNothingElse(@TempDir Path dir) throws Exception {
    Path target = dir.resolve(CacheFiles.entry(KEY));
    Files.writeString(target, "old");
    Counting calls = new Counting();
    Path temporary;
    try (AtomicFile f = AtomicFile.create(target, KEY, null, calls)) {
      temporary = f.temporary();
      assertEquals(dir.toAbsolutePath(), temporary.getParent(), "in the target's directory");
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(temporary)), "private");
      f.writeForced(ByteBuffer.wrap("new entry".getBytes(StandardCharsets.US_ASCII), 4, 5)).replace();
    }
    assertEquals("entry", Files.readString(target), "what remained of the buffer, replacing the old file");
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(target)));
    assertEquals(List.of(CacheFiles.entry(KEY)), names(dir));
    assertEquals(3, calls.ops, "create, write, rename: what the cache counted per store");
    assertEquals(List.of(), calls.discarded, "nothing to remove after the rename");
  }

  @Test
  void permissionsAreThoseAskedFor(@TempDir Path dir) throws Exception {
    Path target = dir.resolve(CacheFiles.TAG);
    try (AtomicFile f = AtomicFile.create(target, CacheFiles.TAG, null, AtomicFile.UNCOUNTED)) {
      f.write("tag", StandardCharsets.UTF_8).permissions(PosixFilePermissions.fromString("rw-r--r--")).replace();
    }
    assertEquals("rw-r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(target)));
    Path lock = dir.resolve(CacheFiles.lock(KEY));
    try (AtomicFile f = AtomicFile.create(lock, CacheFiles.lock(KEY), PosixFilePermissions.fromString("rw-------"),
        AtomicFile.UNCOUNTED)) {
      f.write(new byte[] {1, 2, 3}).link();
    }
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(lock)));
    assertArrayEquals(new byte[] {1, 2, 3}, Files.readAllBytes(lock));
    assertEquals(List.of(CacheFiles.TAG, CacheFiles.lock(KEY)), names(dir));
  }

  @Test
  void linkGivesTheNameOnceAndTheFirstWriterWins(@TempDir Path dir) throws Exception {
    Path target = dir.resolve(CacheFiles.lock(KEY));
    Counting calls = new Counting();
    try (AtomicFile f = AtomicFile.create(target, CacheFiles.lock(KEY), null, calls)) {
      f.write("first", StandardCharsets.UTF_8).link();
    }
    assertEquals(4, calls.ops, "create, write, link, remove the temporary: what the cache counted per lock");
    assertEquals(1, calls.discarded.size(), "the temporary name is removed after the link");
    AtomicFile second = AtomicFile.create(target, CacheFiles.lock(KEY), null, AtomicFile.UNCOUNTED);
    try {
      second.write("second", StandardCharsets.UTF_8);
      assertThrows(FileAlreadyExistsException.class, second::link);
    } finally {
      second.close();
    }
    assertEquals("first", Files.readString(target));
    assertEquals(List.of(CacheFiles.lock(KEY)), names(dir), "no temporary file left");
  }

  @Test
  void aFailedWriteLeavesNoTemporaryAndNoFile(@TempDir Path dir) throws Exception {
    Path target = dir.resolve(CacheFiles.TRUSTED_KEYS_STEM);
    Counting calls = new Counting();
    assertThrows(CharacterCodingException.class, () -> {
      try (AtomicFile f = AtomicFile.create(target, CacheFiles.TRUSTED_KEYS_STEM, null, calls)) {
        f.write("caf\u00e9", StandardCharsets.US_ASCII).replace();
      }
    });
    assertEquals(List.of(), names(dir));
    assertEquals(1, calls.discarded.size());
  }

  @Test
  void aFailedRenameLeavesNoTemporaryAndTheNameAsItWas(@TempDir Path dir) throws Exception {
    Path target = dir.resolve(CacheFiles.entry(KEY));
    Files.createDirectories(target.resolve("inside")); // a non-empty directory cannot be replaced
    assertThrows(IOException.class, () -> {
      try (AtomicFile f = AtomicFile.create(target, KEY, null, AtomicFile.UNCOUNTED)) {
        f.write(new byte[10]).replace();
      }
    });
    assertEquals(List.of(CacheFiles.entry(KEY)), names(dir));
    assertTrue(Files.isDirectory(target.resolve("inside")));
  }

  @Test
  void closingTwiceRemovesOnce(@TempDir Path dir) throws Exception {
    Counting calls = new Counting();
    AtomicFile f = AtomicFile.create(dir.resolve("x"), KEY, null, calls);
    f.close();
    f.close();
    assertEquals(1, calls.discarded.size());
    assertEquals(List.of(), names(dir));
  }

  @Test
  void aStoreThatCannotRenameLeavesNoPartialFile(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("c");
    KernelCache cache = KernelCache.open(CacheSettings.in(dir).toBuilder().signingKey(tmp.resolve("key"))
        .trustedKeys(tmp.resolve("trusted")).build());
    Files.createDirectories(dir.resolve("entries").resolve(CacheFiles.entry(KEY)).resolve("inside"));
    assertFalse(cache.store(KEY, KernelCacheTest.envelope(100)));
    assertEquals(List.of(CacheFiles.entry(KEY)), names(dir.resolve("entries")), "no temporary entry left");
  }

  @Test
  void aLockWhoseNameIsTakenIsRefusedAndLeavesNoTemporary(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("c");
    CacheDirectory d = CacheDirectory.open(CacheSettings.in(dir).toBuilder().signingKey(tmp.resolve("key"))
        .trustedKeys(tmp.resolve("trusted")).build(), dir);
    long before = d.fileOperations();
    LockFile first = LockFile.tryCreate(d, d.lockFile(KEY), 0);
    assertNotNull(first);
    assertEquals(4, d.fileOperations() - before, "create, write, link, remove the temporary");
    assertTrue(Files.readString(first.file()).contains("pid=" + ProcessHandle.current().pid()));
    Set<PosixFilePermission> mode = Files.getPosixFilePermissions(first.file());
    assertTrue(PosixFilePermissions.fromString("rw-r--r--").containsAll(mode)
        && mode.containsAll(PosixFilePermissions.fromString("rw-------")), "readable by all, as the umask allows: " + mode);
    assertNull(LockFile.tryCreate(d, d.lockFile(KEY), 0), "the name is taken");
    assertEquals(List.of(CacheFiles.lock(KEY)), names(d.locks));
    first.close();
    assertEquals(List.of(), names(d.locks));
  }

  @Test
  void theSigningKeyIsCreatedPrivateOnceAndTheTrustFileReplacedWhole(@TempDir Path tmp) throws Exception {
    Path keys = tmp.resolve("config");
    Path key = keys.resolve("signing-key");
    Path trust = keys.resolve("trusted-keys");
    EntrySigning mine = EntrySigning.open(key, trust);
    byte[] made = Files.readAllBytes(key);
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(key)));
    EntrySigning.open(key, trust);
    assertArrayEquals(made, Files.readAllBytes(key), "an existing key is used, never replaced");
    Path offered = tmp.resolve("offered");
    Files.writeString(offered, mine.publicKey() + "\n");
    assertEquals(List.of(mine.publicKey()), EntrySigning.trust(trust, offered));
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(trust)));
    assertEquals(List.of("signing-key", "trusted-keys"), names(keys), "no temporary file left beside them");
  }
}
