package org.mpibuild.internal.cache;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.zip.CRC32C;
import org.mpibuild.CorruptBinaryException;
import org.mpibuild.internal.Envelope;
import org.mpibuild.internal.Settings;

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
 * </pre>
 */
public final class EntryCodec {
  static final byte[] MAGIC = "MPIBKENT".getBytes(StandardCharsets.US_ASCII);
  static final int ENTRY_FORMAT = 1;
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

  /** A whole entry: header, then the serialized envelope. */
  public static byte[] encode(String key, byte[] envelope) {
    return ByteBuffer.allocate(HEADER_BYTES + envelope.length).put(header(key)).put(envelope).array();
  }

  /**
   * Decodes an entry read for {@code key}, checking the entry header, that it holds that key, and the
   * whole envelope.
   *
   * @throws CorruptBinaryException naming the check that failed
   */
  public static Envelope decode(String key, byte[] bytes) {
    if (bytes.length < HEADER_BYTES) {
      throw new CorruptBinaryException("entry is truncated: " + bytes.length + " bytes, its header alone needs "
          + HEADER_BYTES);
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
    return Envelope.fromBytes(Arrays.copyOfRange(bytes, HEADER_BYTES, bytes.length), Long.MAX_VALUE,
        Settings.DEFAULT_CHUNK_BYTES);
  }
}
