package org.mpibuild.internal.cache;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.zip.CRC32C;
import org.mpibuild.CorruptBinaryException;
import org.mpibuild.internal.wire.Envelope;

/**
 * The bytes of one cache entry file.
 *
 * <pre>
 * entry header, 48 bytes, big-endian:
 *   0  8  magic "MPIBKENT"
 *   8  2  entry format version (3)
 *  10  2  reserved, 0
 *  12 32  the cache key (SHA-256)
 *  44  4  CRC32C of bytes 0..43
 * then the envelope, exactly as broadcast (see {@link Envelope})
 * then the signature trailer, 140 bytes (see {@link EntrySigning}): the writer's public key, its Ed25519
 *   signature of the message, and its seal of the message, the key and the signature; the message is
 *   {@link #DIGEST_DOMAIN} followed by the SHA-256 of everything before the trailer
 * </pre>
 *
 * <p>Format 3 signs a digest of the entry, not the entry: Ed25519 hashes what it signs twice with SHA-512,
 * which a new JVM runs cold (26-34 ms for a 170 KB binary, and a compile of SHA-512 besides), where one SHA-256
 * of the entry is needed anyway. Format 2 (mpi-build 0.2), whose signature and seal cover the header and
 * envelope themselves, is still read; format 1 (no signature) is refused like any other unsigned entry, and
 * rebuilt.
 */
public final class EntryCodec {
  static final byte[] MAGIC = "MPIBKENT".getBytes(StandardCharsets.US_ASCII);
  static final int ENTRY_FORMAT = 3;
  /** The format whose trailer signs the header and envelope themselves: still read, no longer written. */
  static final int SIGNED_WHOLE_FORMAT = 2;
  /** What a format-3 signature covers before the digest: the entry's kind, so that no other message's digest fits. */
  static final byte[] DIGEST_DOMAIN = "mpi-build cache entry, format 3, SHA-256 of header and envelope:"
      .getBytes(StandardCharsets.US_ASCII);
  /** Size of the entry header. */
  public static final int HEADER_BYTES = 48;

  private EntryCodec() {}

  /** The entry header for {@code key}, ready to write. */
  static ByteBuffer header(String key) {
    return header(key, ENTRY_FORMAT);
  }

  /** The entry header of {@code format} for {@code key}. */
  static ByteBuffer header(String key, int format) {
    ByteBuffer h = ByteBuffer.allocate(HEADER_BYTES);
    h.put(MAGIC).putShort((short) format).putShort((short) 0).put(HexFormat.of().parseHex(key));
    CRC32C crc = new CRC32C();
    crc.update(h.array(), 0, HEADER_BYTES - 4);
    h.putInt((int) crc.getValue());
    return h.flip();
  }

  /** A whole entry with an empty (unsigned) trailer: what a forger without a trusted key can write. */
  public static byte[] encode(String key, byte[] envelope) {
    return encode(key, envelope, null);
  }

  /** A whole entry: header, the serialized envelope, the trailer signed by {@code signing} (empty if null). */
  public static byte[] encode(String key, byte[] envelope, EntrySigning signing) {
    int signed = HEADER_BYTES + envelope.length;
    byte[] out = ByteBuffer.allocate(signed + EntrySigning.TRAILER_BYTES).put(header(key)).put(envelope).array();
    if (signing != null) {
      byte[] message = digestMessage(out, signed);
      System.arraycopy(signing.sign(message, message.length), 0, out, signed, EntrySigning.TRAILER_BYTES);
    }
    return out;
  }

  /** What a format-3 trailer signs and seals: {@link #DIGEST_DOMAIN} and the SHA-256 of the first {@code signed} bytes. */
  static byte[] digestMessage(byte[] entry, int signed) {
    MessageDigest sha = org.mpibuild.internal.wire.Payload.sha256Digest();
    sha.update(entry, 0, signed);
    byte[] digest = sha.digest();
    byte[] message = Arrays.copyOf(DIGEST_DOMAIN, DIGEST_DOMAIN.length + digest.length);
    System.arraycopy(digest, 0, message, DIGEST_DOMAIN.length, digest.length);
    return message;
  }

  /**
   * Accepts an entry (whose header {@link #decode} has checked) only if a trusted key signed it, as its format says.
   *
   * @throws EntrySigning.UntrustedEntryException if no trusted key vouches for it
   */
  static void verify(byte[] entry, EntrySigning signing) {
    if (entry.length < HEADER_BYTES + EntrySigning.TRAILER_BYTES) {
      throw new EntrySigning.UntrustedEntryException("unsigned: no signature trailer");
    }
    int signed = entry.length - EntrySigning.TRAILER_BYTES;
    int format = Short.toUnsignedInt(ByteBuffer.wrap(entry).getShort(MAGIC.length));
    switch (format) {
      case ENTRY_FORMAT -> {
        byte[] message = digestMessage(entry, signed);
        signing.verify(entry, message, message.length);
      }
      case SIGNED_WHOLE_FORMAT -> signing.verify(entry, entry, signed); // the bytes themselves, in place
      default -> throw new CorruptBinaryException("cache entry format " + format + " is not supported");
    }
  }

  /** The largest entry this library reads: it is read whole into one array. */
  static final long MAX_ENTRY_BYTES = Integer.MAX_VALUE - 64;

  /**
   * Reads the entry file for {@code key} after checking, from its first bytes alone, that it is a regular
   * file (never a link), that its size is what its headers say, and that its binary is at most
   * {@code maxBinaryBytes}; so that a stray, planted or oversized file is refused before it is read.
   *
   * @return the file's bytes, ready for {@link #decode}
   * @throws CorruptBinaryException naming the check that failed
   * @throws NoSuchFileException if there is no entry
   */
  static byte[] read(Path file, long maxBinaryBytes) throws IOException {
    BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    if (!a.isRegularFile()) {
      throw new CorruptBinaryException("not a regular file (" + (a.isSymbolicLink() ? "a symbolic link" : "not a file")
          + "); entries are never followed through links");
    }
    long size = a.size();
    int headers = HEADER_BYTES + Envelope.HEADER_BYTES;
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
      if (size >= headers) {
        ByteBuffer first = readFully(ch, ByteBuffer.allocate(headers));
        first.flip().position(HEADER_BYTES);
        Envelope.Header h = Envelope.decodeHeader(first.slice(), maxBinaryBytes);
        long expected = (long) headers + h.metadataLength() + h.payloadLength() + EntrySigning.TRAILER_BYTES;
        if (size != expected) {
          throw new CorruptBinaryException("entry is " + size + " bytes but its headers say " + expected);
        }
        if (size > MAX_ENTRY_BYTES) {
          throw new CorruptBinaryException("entry of " + size + " bytes exceeds the " + MAX_ENTRY_BYTES
              + " bytes one entry may hold");
        }
      }
      // The whole entry, through the same channel: the headers are read again from position 0, no reopening.
      return readFully(ch.position(0), ByteBuffer.allocate((int) Math.min(size, MAX_ENTRY_BYTES))).array();
    }
  }

  private static ByteBuffer readFully(FileChannel ch, ByteBuffer into) throws IOException {
    while (into.hasRemaining() && ch.read(into) >= 0) {
      // until full or at the end of the file
    }
    return into;
  }

  /**
   * Decodes an entry read for {@code key}, checking the entry header, that it holds that key, and the
   * whole envelope.
   *
   * @throws CorruptBinaryException naming the check that failed
   */
  public static Envelope decode(String key, byte[] bytes) {
    return decode(key, bytes, null);
  }

  /**
   * Decodes an entry as {@link #decode(String, byte[])} does, and, with {@code signing}, accepts it only if
   * a trusted key signed it.
   *
   * @throws EntrySigning.UntrustedEntryException if no trusted key vouches for it
   */
  public static Envelope decode(String key, byte[] bytes, EntrySigning signing) {
    if (bytes.length < HEADER_BYTES + EntrySigning.TRAILER_BYTES) {
      throw new CorruptBinaryException("entry is truncated: " + bytes.length + " bytes, its header and signature "
          + "alone need " + (HEADER_BYTES + EntrySigning.TRAILER_BYTES));
    }
    ByteBuffer h = ByteBuffer.wrap(bytes);
    byte[] magic = new byte[MAGIC.length];
    h.get(magic);
    if (!Arrays.equals(magic, MAGIC)) {
      throw new CorruptBinaryException("not a cache entry: bad magic");
    }
    int version = Short.toUnsignedInt(h.getShort());
    if (version != ENTRY_FORMAT && version != SIGNED_WHOLE_FORMAT) {
      throw new CorruptBinaryException("cache entry format " + version + " is not supported (this library reads "
          + SIGNED_WHOLE_FORMAT + " and " + ENTRY_FORMAT + ")");
    }
    h.getShort();
    byte[] stored = new byte[32];
    h.get(stored);
    CRC32C crc = new CRC32C();
    crc.update(bytes, 0, HEADER_BYTES - 4);
    if ((int) crc.getValue() != h.getInt()) {
      throw new CorruptBinaryException("cache entry header checksum mismatch");
    }
    if (!MessageDigest.isEqual(stored, HexFormat.of().parseHex(key))) {
      throw new CorruptBinaryException("cache entry holds key " + HexFormat.of().formatHex(stored) + ", not " + key);
    }
    // Accidents first (lengths, SHA-256, metadata checksum), so that they are reported as such; then intent.
    Envelope envelope = Envelope.fromBytes(Arrays.copyOfRange(bytes, HEADER_BYTES,
        bytes.length - EntrySigning.TRAILER_BYTES), Long.MAX_VALUE);
    if (signing != null) {
      verify(bytes, signing);
    }
    return envelope;
  }
}
