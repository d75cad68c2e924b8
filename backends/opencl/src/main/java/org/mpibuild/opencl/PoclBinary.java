package org.mpibuild.opencl;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.function.BiPredicate;

/**
 * Reads and filters the program binary of PoCL's CPU devices ({@code lib/CL/pocl_binary.c}, format versions 9
 * of PoCL 3.1 to 5.0 and 11 of 6.0 to 7.1), all of it little-endian:
 *
 * <pre>
 * header   "poclbin\0", device id u64, version u32, kernels u32, flags u64, root entries u32,
 *          build hash 41 bytes, [program-scope variable bytes u64 where flags has bit 1 (version 11)]
 * root     per root entry: its bytes u64, then file records ({@code /program.bc})
 * kernel   per kernel: record bytes u64, file bytes u64, arginfo bytes u32, name (u32 length, bytes), the
 *          rest of its metadata; the record's last "file bytes" are the file records of the kernel's cache
 *          directory
 * file     path (u32 length, bytes: {@code /KERNEL/SPECIALIZATION/KERNEL.so}), content (u32 length, bytes)
 * </pre>
 *
 * Nothing in the format covers the contents with a checksum: the deserializer walks the records with these
 * sizes, which {@link #keepOnly} keeps right. The envelope that carries the binary between ranks has its own
 * checksum.
 */
final class PoclBinary {
  static final byte[] MAGIC = "poclbin\0".getBytes(StandardCharsets.US_ASCII);
  /** Build hash: {@code SHA1_digest_t}, 20 bytes as hexadecimal and a terminating zero. */
  private static final int BUILD_HASH_BYTES = 41;
  private static final long HAS_PROGRAM_SCOPE_VARIABLES = 1L << 1;

  private PoclBinary() {}

  /** Whether {@code binary} starts as a PoCL binary does. */
  static boolean isPoclBinary(byte[] binary) {
    if (binary.length < MAGIC.length) {
      return false;
    }
    for (int i = 0; i < MAGIC.length; i++) {
      if (binary[i] != MAGIC[i]) {
        return false;
      }
    }
    return true;
  }

  /**
   * {@code binary} with only the work-group functions {@code keep} accepts: a file of a kernel's cache
   * directory at {@code /DIR/SPECIALIZATION/...} stays when {@code keep.test(kernel, SPECIALIZATION)}, where
   * {@code kernel} is the kernel's name as its record gives it; files directly under the kernel's directory and
   * the program's own entries ({@code program.bc}) always stay.
   *
   * @throws IllegalArgumentException if {@code binary} is not a PoCL binary of a known version, or its sizes do
   *     not add up
   */
  static byte[] keepOnly(byte[] binary, BiPredicate<String, String> keep) {
    ByteBuffer in = ByteBuffer.wrap(binary).order(ByteOrder.LITTLE_ENDIAN);
    if (!isPoclBinary(binary)) {
      throw new IllegalArgumentException("not a PoCL program binary (" + binary.length + " bytes, no 'poclbin' magic)");
    }
    in.position(MAGIC.length + 8);
    int version = in.getInt();
    if (version < 9 || version > 11) {
      throw new IllegalArgumentException("PoCL program binary of format version " + version
          + ": only versions 9 to 11 (PoCL 3.1 to 7.1) are known");
    }
    int kernels = in.getInt();
    long flags = in.getLong();
    int rootEntries = in.getInt();
    skip(in, BUILD_HASH_BYTES, "the build hash");
    if (version >= 11 && (flags & HAS_PROGRAM_SCOPE_VARIABLES) != 0) {
      skip(in, 8, "the program-scope variable size");
    }
    for (int i = 0; i < rootEntries; i++) {
      skip(in, length(in.getLong(), in, "root entry " + i), "root entry " + i);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(binary.length);
    out.write(binary, 0, in.position());
    for (int k = 0; k < kernels; k++) {
      int start = in.position();
      long recordBytes = length(in.getLong(), in, "kernel record " + k, 8);
      long fileBytes = in.getLong();
      if (fileBytes < 0 || fileBytes > recordBytes - 20) {
        throw new IllegalArgumentException("kernel record " + k + " claims " + fileBytes + " bytes of files in a record of "
            + recordBytes);
      }
      in.getInt(); // arginfo bytes
      String name = string(in, "kernel record " + k + "'s name");
      int files = start + (int) (recordBytes - fileBytes);
      int end = start + (int) recordBytes;
      if (files < in.position()) {
        throw new IllegalArgumentException("kernel " + name + "'s files start inside its metadata");
      }
      ByteArrayOutputStream kept = new ByteArrayOutputStream((int) fileBytes);
      in.position(files);
      while (in.position() < end) {
        int record = in.position();
        String path = string(in, "a file path of kernel " + name);
        skip(in, length(Integer.toUnsignedLong(in.getInt()), in, "file " + path), "file " + path);
        if (in.position() > end) {
          throw new IllegalArgumentException("file " + path + " runs past kernel " + name + "'s record");
        }
        String[] parts = path.split("/");
        // "", DIR, SPECIALIZATION, FILE...: a work-group function; "", DIR, FILE: the kernel's own file
        if (parts.length < 4 || keep.test(name, parts[2])) {
          kept.write(binary, record, in.position() - record);
        }
      }
      byte[] header = Arrays.copyOfRange(binary, start, files);
      ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN).putLong(0, header.length + (long) kept.size())
          .putLong(8, kept.size());
      out.write(header, 0, header.length);
      out.write(kept.toByteArray(), 0, kept.size());
    }
    if (in.position() != binary.length) {
      throw new IllegalArgumentException("PoCL program binary of " + binary.length + " bytes has "
          + (binary.length - in.position()) + " bytes after its last kernel record");
    }
    return out.toByteArray();
  }

  private static long length(long n, ByteBuffer in, String what) {
    return length(n, in, what, 0);
  }

  /** {@code n} bytes of {@code what}, of which {@code alreadyRead} have been read, checked against what is left. */
  private static long length(long n, ByteBuffer in, String what, int alreadyRead) {
    if (n < alreadyRead || n - alreadyRead > in.remaining()) {
      throw new IllegalArgumentException(what + " claims " + n + " bytes, with " + (in.remaining() + alreadyRead)
          + " left in the PoCL program binary");
    }
    return n;
  }

  private static void skip(ByteBuffer in, long n, String what) {
    if (n > in.remaining()) {
      throw new IllegalArgumentException("PoCL program binary ends inside " + what);
    }
    in.position(in.position() + (int) n);
  }

  private static String string(ByteBuffer in, String what) {
    if (in.remaining() < 4) {
      throw new IllegalArgumentException("PoCL program binary ends before " + what);
    }
    int n = (int) length(Integer.toUnsignedLong(in.getInt()), in, what);
    String s = new String(in.array(), in.arrayOffset() + in.position(), n, StandardCharsets.UTF_8);
    in.position(in.position() + n);
    return s;
  }
}
