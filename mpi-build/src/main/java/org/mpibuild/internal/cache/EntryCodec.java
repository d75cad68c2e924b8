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
 *   8  2  entry format version (1)
 *  10  2  reserved, 0
 *  12 32  the cache key (SHA-256)
 *  44  4  CRC32C of bytes 0..43
 * then the envelope, exactly as broadcast (see {@link Envelope})
 * then the signature trailer, 108 bytes (see {@link EntrySigning}): the writer's public key and its
 *   Ed25519 signature of everything before it
 * </pre>
 *
 * <p>Format 1 (no signature) is refused like any other unsigned entry, and rebuilt.
 */
public final class EntryCodec {
  static final byte[] MAGIC = "MPIBKENT".getBytes(StandardCharsets.US_ASCII);
  static final int ENTRY_FORMAT = 2;
  /** Size of the entry header. */
  public static final int HEADER_BYTES = 48;

  private EntryCodec() {}

  /** The entry header for {@code key}, ready to write. */
  static ByteBuffer header(String key) {
    ByteBuffer h = ByteBuffer.allocate(HEADER_BYTES);
    h.put(MAGIC).putShort((short) ENTRY_FORMAT).putShort((short) 0).put(HexFormat.of().parseHex(key));
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
      System.arraycopy(signing.sign(out, 0, signed), 0, out, signed, EntrySigning.TRAILER_BYTES);
    }
    return out;
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
    if (version != ENTRY_FORMAT) {
      throw new CorruptBinaryException("cache entry format " + version + " is not supported (this library reads "
          + ENTRY_FORMAT + ")");
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
      signing.verify(bytes);
    }
    return envelope;
  }
}
