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
    byte[] old = formatTwo(EntrySigning.open(tmp.resolve("alice"), null));
    Files.write(Files.createDirectories(dir.resolve("entries")).resolve(KEY + ".kbin"), old);
    assertNotNull(alice.lookup(KEY), "her own format-2 entry, by its seal");
    EntrySigning.trust(tmp.resolve("bob-trusted"), tmp.resolve("alice"));
    KernelCache bob = KernelCache.open(CacheSettings.in(dir).toBuilder().signingKey(tmp.resolve("bob"))
        .trustedKeys(tmp.resolve("bob-trusted")).build());
    assertNotNull(bob.lookup(KEY), "alice's format-2 entry, by her signature of its bytes");
    assertEquals(0, alice.untrustedEntries() + bob.untrustedEntries());
  }

  /**
   * An entry whose header says one format and whose trailer signs (and seals) the other format's message of those
   * same bytes: the verifier must take the message from the header, for the writer's seal and for a trusted
   * signature alike.
   */
  @Test
  void aTrailerMadeForTheOtherFormatNeverVouches(@TempDir Path tmp) throws Exception {
    EntrySigning alice = EntrySigning.open(tmp.resolve("alice"), null);
    EntrySigning.trust(tmp.resolve("bob-trusts-alice"), tmp.resolve("alice"));
    EntrySigning bob = EntrySigning.open(tmp.resolve("bob"), tmp.resolve("bob-trusts-alice"));
    byte[] envelope = KernelCacheTest.envelope(1000).toBytes();
    int signed = EntryCodec.HEADER_BYTES + envelope.length;
    // labelled 3, its trailer signing the bytes themselves, as format 2 would
    byte[] three = unsigned(3, envelope);
    System.arraycopy(alice.sign(three, signed), 0, three, signed, EntrySigning.TRAILER_BYTES);
    // labelled 2, its trailer signing the digest, as format 3 would
    byte[] two = unsigned(2, envelope);
    byte[] digest = EntryCodec.digestMessage(two, signed);
    System.arraycopy(alice.sign(digest, digest.length), 0, two, signed, EntrySigning.TRAILER_BYTES);
    for (byte[] entry : new byte[][] {three, two}) {
      assertNotNull(EntryCodec.decode(KEY, entry), "a well-formed entry, but for its trailer");
      assertThrows(EntrySigning.UntrustedEntryException.class, () -> EntryCodec.decode(KEY, entry, alice), "seal");
      assertThrows(EntrySigning.UntrustedEntryException.class, () -> EntryCodec.decode(KEY, entry, bob), "signature");
    }
    // and each format, signed as its own, passes both
    for (byte[] entry : new byte[][] {EntryCodec.encode(KEY, envelope, alice), formatTwo(alice)}) {
      assertNotNull(EntryCodec.decode(KEY, entry, alice));
      assertNotNull(EntryCodec.decode(KEY, entry, bob));
    }
  }

  /** An entry of {@code format} for {@link #KEY} holding {@code envelope}, its trailer empty. */
  private static byte[] unsigned(int format, byte[] envelope) {
    return java.nio.ByteBuffer.allocate(EntryCodec.HEADER_BYTES + envelope.length + EntrySigning.TRAILER_BYTES)
        .put(EntryCodec.header(KEY, format)).put(envelope).array();
  }

  /** An entry as mpi-build 0.2 wrote it: format 2, its trailer signing and sealing the header and envelope. */
  private static byte[] formatTwo(EntrySigning signing) {
    byte[] envelope = KernelCacheTest.envelope(1000).toBytes();
    byte[] entry = unsigned(2, envelope);
    int signed = EntryCodec.HEADER_BYTES + envelope.length;
    System.arraycopy(signing.sign(entry, signed), 0, entry, signed, EntrySigning.TRAILER_BYTES);
    assertEquals(2, entry[9]);
    return entry;
  }

  @Test
  void preparingNeverThrowsAndTheEntryStillSaysWhyItCannotBeSigned(@TempDir Path tmp) throws Exception {
    Path key = tmp.resolve("key");
    EntrySigning.open(key, null);
    String text = Files.readString(key);
    // not a key, then not even base64 (which the decoder refuses with an IllegalArgumentException)
    for (String line : new String[] {"private AAAA", "private !!!not-base64"}) {
      Files.writeString(key, text.replaceFirst("(?m)^private .*$", line));
      EntrySigning broken = EntrySigning.open(key, null);
      assertDoesNotThrow(broken::prepare, line);
      IllegalStateException e = assertThrows(IllegalStateException.class, () -> broken.sign(new byte[] {1}, 1));
      assertTrue(e.getMessage().startsWith("signing a cache entry failed"), e.getMessage());
    }
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
