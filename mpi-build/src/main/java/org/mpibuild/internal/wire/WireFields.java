package org.mpibuild.internal.wire;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.zip.CRC32C;
import org.mpibuild.CorruptBinaryException;

/**
 * The field encodings of the envelope's wire format ({@link Envelope}): CRC32C checksums, length-prefixed UTF-8
 * strings read back with their length checked, texts cut to a byte limit at character boundaries, hex.
 */
final class WireFields {
  private WireFields() {}

  static String hex(byte[] bytes) {
    return HexFormat.of().formatHex(bytes);
  }

  static int crc(byte[] bytes) {
    CRC32C c = new CRC32C();
    c.update(bytes);
    return (int) c.getValue();
  }

  static int crc(ByteBuffer from, int length) {
    ByteBuffer view = from.duplicate();
    view.limit(view.position() + length);
    CRC32C c = new CRC32C();
    c.update(view);
    return (int) c.getValue();
  }

  static byte[] utf8(String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(4 + b.length).putInt(b.length).put(b).array();
  }

  static String readUtf8(ByteBuffer in) {
    int n = in.getInt();
    if (n < 0 || n > in.remaining()) {
      throw new CorruptBinaryException("string length " + n + " in binary metadata exceeds the " + in.remaining()
          + " bytes left");
    }
    byte[] b = new byte[n];
    in.get(b);
    return new String(b, StandardCharsets.UTF_8);
  }

  /**
   * {@code text} if its UTF-8 form fits in {@code maxBytes}; otherwise its head and its tail, cut at
   * character boundaries, around a line that says how many bytes of the {@code what} were cut. The result
   * never exceeds {@code maxBytes} in UTF-8.
   */
  static String cut(String text, int maxBytes, String what) {
    if ((long) text.length() * 3 <= maxBytes) {
      return text; // no UTF-8 form of this many characters can exceed the limit
    }
    byte[] b = text.getBytes(StandardCharsets.UTF_8);
    if (b.length <= maxBytes) {
      return text;
    }
    String mark = "\n[mpi-build: " + b.length + " bytes of " + what + ", too long to send; "
        + "about %d bytes cut here]\n";
    int keep = maxBytes - mark.length() - 24; // room for the figure
    int head = boundary(b, keep / 2);
    int tail = boundary(b, b.length - (keep - head));
    return new String(b, 0, head, StandardCharsets.UTF_8) + String.format(mark, tail - head)
        + new String(b, tail, b.length - tail, StandardCharsets.UTF_8);
  }

  /** The first index at or after {@code i} where a UTF-8 character starts. */
  private static int boundary(byte[] b, int i) {
    while (i < b.length && (b[i] & 0xC0) == 0x80) {
      i++;
    }
    return i;
  }

  static String nonNull(String s) {
    return s == null ? "" : s;
  }
}
