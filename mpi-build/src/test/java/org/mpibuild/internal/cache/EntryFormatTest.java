package org.mpibuild.internal.cache;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.MessageDigest;
import java.security.Signature;
import java.security.spec.X509EncodedKeySpec;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.internal.settings.CacheSettings;

/**
 * Entry format 3 (issue 41): the trailer signs and seals a digest of the entry, not its bytes; entries of format 2
 * (mpi-build 0.2, which signed the bytes) are still read; and the verifier takes the message from the entry's own
 * format, so a trailer made for one format never vouches for the other.
 */
class EntryFormatTest {
  private static final String KEY = KernelCacheTest.KEY;

  @Test
  void theSignatureCoversTheDomainAndTheDigestNotTheBytes(@TempDir Path tmp) throws Exception {
    EntrySigning signing = EntrySigning.open(tmp.resolve("key"), null);
    byte[] envelope = KernelCacheTest.envelope(1000).toBytes();
    byte[] entry = EntryCodec.encode(KEY, envelope, signing);
    int signed = EntryCodec.HEADER_BYTES + envelope.length;
    assertEquals(signed + EntrySigning.TRAILER_BYTES, entry.length);
    assertEquals(3, entry[9], "format 3 in the header");
    byte[] digest = MessageDigest.getInstance("SHA-256").digest(Arrays.copyOf(entry, signed));
    byte[] message = Arrays.copyOf(EntryCodec.DIGEST_DOMAIN, EntryCodec.DIGEST_DOMAIN.length + 32);
    System.arraycopy(digest, 0, message, EntryCodec.DIGEST_DOMAIN.length, 32);
    assertTrue(verifies(entry, signed, message), "Ed25519 of the domain and the SHA-256 of header and envelope");
    assertFalse(verifies(entry, signed, Arrays.copyOf(entry, signed)), "not of the bytes themselves");
  }

  @Test
  void anEntryWrittenByMpiBuild02StillLoadsForItsWriterAndForWhoeverTrustsIt(@TempDir Path tmp) throws Exception {
    Path dir = tmp.resolve("c");
    KernelCache alice = KernelCache.open(CacheSettings.in(dir).toBuilder().signingKey(tmp.resolve("alice")).build());
    byte[] old = EntryCodec.encode(KEY, KernelCacheTest.envelope(1000).toBytes(),
        EntrySigning.open(tmp.resolve("alice"), null), EntryCodec.SIGNED_WHOLE_FORMAT);
    assertEquals(2, old[9]);
    Files.write(Files.createDirectories(dir.resolve("entries")).resolve(KEY + ".kbin"), old);
    assertNotNull(alice.lookup(KEY), "her own format-2 entry, by its seal");
    EntrySigning.trust(tmp.resolve("bob-trusted"), tmp.resolve("alice"));
    KernelCache bob = KernelCache.open(CacheSettings.in(dir).toBuilder().signingKey(tmp.resolve("bob"))
        .trustedKeys(tmp.resolve("bob-trusted")).build());
    assertNotNull(bob.lookup(KEY), "alice's format-2 entry, by her signature of its bytes");
    assertEquals(0, alice.untrustedEntries() + bob.untrustedEntries());
  }

  @Test
  void aTrailerMadeForTheOtherFormatNeverVouches(@TempDir Path tmp) throws Exception {
    EntrySigning alice = EntrySigning.open(tmp.resolve("alice"), null);
    byte[] envelope = KernelCacheTest.envelope(1000).toBytes();
    // a format-2 entry relabelled as format 3 (header checksum mended): its trailer signs the bytes, not a digest
    byte[] relabelled = EntryCodec.encode(KEY, envelope, alice, EntryCodec.SIGNED_WHOLE_FORMAT);
    System.arraycopy(EntryCodec.header(KEY, 3).array(), 0, relabelled, 0, EntryCodec.HEADER_BYTES);
    // a format-3 entry relabelled as format 2: its trailer signs a digest, not the bytes
    byte[] downgraded = EntryCodec.encode(KEY, envelope, alice);
    System.arraycopy(EntryCodec.header(KEY, 2).array(), 0, downgraded, 0, EntryCodec.HEADER_BYTES);
    EntrySigning.trust(tmp.resolve("bob-trusts-alice"), tmp.resolve("alice"));
    EntrySigning bob = EntrySigning.open(tmp.resolve("bob"), tmp.resolve("bob-trusts-alice"));
    assertNotNull(EntryCodec.decode(KEY, EntryCodec.encode(KEY, envelope, alice), bob), "her format-3 entry");
    for (byte[] entry : new byte[][] {relabelled, downgraded}) {
      assertNotNull(EntryCodec.decode(KEY, entry), "a well-formed entry, but for its trailer");
      assertThrows(EntrySigning.UntrustedEntryException.class, () -> EntryCodec.decode(KEY, entry, alice), "seal");
      assertThrows(EntrySigning.UntrustedEntryException.class, () -> EntryCodec.decode(KEY, entry, bob), "signature");
    }
  }

  @Test
  void preparingNeverThrowsAndTheEntryStillSaysWhyItCannotBeSigned(@TempDir Path tmp) throws Exception {
    Path key = tmp.resolve("key");
    EntrySigning.open(key, null);
    String text = Files.readString(key);
    Files.writeString(key, text.replaceFirst("(?m)^private .*$", "private AAAA"));
    EntrySigning broken = EntrySigning.open(key, null);
    assertDoesNotThrow(broken::prepare);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> broken.sign(new byte[] {1}));
    assertTrue(e.getMessage().startsWith("signing a cache entry failed"), e.getMessage());
    EntrySigning good = EntrySigning.open(tmp.resolve("good"), null);
    good.prepare();
    byte[] entry = EntryCodec.encode(KEY, KernelCacheTest.envelope(10).toBytes(), good);
    assertNotNull(EntryCodec.decode(KEY, entry, good), "prepared, then signed as ever");
  }

  private static boolean verifies(byte[] entry, int trailer, byte[] message) throws Exception {
    byte[] pub = Arrays.copyOfRange(entry, trailer, trailer + EntrySigning.PUBLIC_KEY_BYTES);
    Signature s = Signature.getInstance("Ed25519");
    s.initVerify(KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(pub)));
    s.update(message);
    return s.verify(entry, trailer + EntrySigning.PUBLIC_KEY_BYTES, EntrySigning.SIGNATURE_BYTES);
  }
}
