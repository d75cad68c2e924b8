package org.mpibuild.opencl;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
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

  /** Where the build hash starts: after the magic, the device id, the version, the kernels, the flags, the root entries. */
  private static final int BUILD_HASH_AT = MAGIC.length + 8 + 4 + 4 + 8 + 4;

  /**
   * The build hash of {@code binary}: the directory, under PoCL's cache, that a process loading it unpacks it into
   * ({@code clCreateProgramWithBinary.c}: {@code pocl_binary_set_program_buildhash}).
   *
   * @throws IllegalArgumentException if it is not a PoCL binary of a known version
   */
  static String buildHash(byte[] binary) {
    version(binary);
    int end = BUILD_HASH_AT;
    while (end < BUILD_HASH_AT + BUILD_HASH_BYTES - 1 && binary[end] != 0) {
      end++;
    }
    return new String(binary, BUILD_HASH_AT, end - BUILD_HASH_AT, StandardCharsets.US_ASCII);
  }

  /** The device id of {@code binary}'s header: PoCL's hash of the device's build hash (target triple, processor). */
  static long deviceId(byte[] binary) {
    version(binary);
    return ByteBuffer.wrap(binary, MAGIC.length, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
  }

  /**
   * {@code binary} with the build hash {@code hash}, which has the form of a program's in PoCL's kernel cache.
   *
   * @throws IllegalArgumentException if it is not a PoCL binary of a known version, or {@code hash} is not of that
   *     form ({@code XX/} and 37 letters {@code A} to {@code P})
   */
  static byte[] withBuildHash(byte[] binary, String hash) {
    version(binary);
    if (!FORM.matcher(hash).matches()) {
      throw new IllegalArgumentException("build hash '" + hash + "' is not of PoCL's form (XX/ and 37 letters A to P)");
    }
    byte[] out = binary.clone();
    System.arraycopy(hash.getBytes(StandardCharsets.US_ASCII), 0, out, BUILD_HASH_AT, hash.length());
    out[BUILD_HASH_AT + hash.length()] = 0;
    return out;
  }

  /** The form of PoCL's build hash of a program in its kernel cache. */
  private static final java.util.regex.Pattern FORM = java.util.regex.Pattern.compile("[A-P]{2}/[A-P]{37}");

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

  /** A file of a kernel's cache directory: its path ({@code /DIR/SPECIALIZATION/FILE}) and its whole record. */
  record FileRecord(String path, byte[] record) {
    /** The specialization directory of a work-group function's file; null for a file directly under the kernel. */
    String specialization() {
      String[] parts = path.split("/");
      // "", DIR, SPECIALIZATION, FILE...: a work-group function; "", DIR, FILE: the kernel's own file
      return parts.length < 4 ? null : parts[2];
    }
  }

  /** A kernel's record: its name, its bytes up to its files (the size fields included), its files. */
  record KernelRecord(String name, byte[] metadata, List<FileRecord> files) {}

  /** A binary taken apart: the header and root entries as they were, then the kernels' records in order. */
  record Parsed(byte[] head, List<KernelRecord> kernels) {
    /** The binary these parts make, each kernel's two size fields written for its files. */
    byte[] toBytes() {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      out.write(head, 0, head.length);
      for (KernelRecord k : kernels) {
        long fileBytes = k.files().stream().mapToLong(f -> f.record().length).sum();
        byte[] metadata = k.metadata().clone();
        ByteBuffer.wrap(metadata).order(ByteOrder.LITTLE_ENDIAN).putLong(0, metadata.length + fileBytes)
            .putLong(8, fileBytes);
        out.write(metadata, 0, metadata.length);
        k.files().forEach(f -> out.write(f.record(), 0, f.record().length));
      }
      return out.toByteArray();
    }
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
    Parsed p = parse(binary);
    List<KernelRecord> kernels = new ArrayList<>();
    for (KernelRecord k : p.kernels()) {
      kernels.add(new KernelRecord(k.name(), k.metadata(), k.files().stream()
          .filter(f -> f.specialization() == null || keep.test(k.name(), f.specialization())).toList()));
    }
    return new Parsed(p.head(), kernels).toBytes();
  }

  /** {@link #keepOnly} the work-group functions of the (kernel, specialization) pairs {@code named} names. */
  static byte[] keepNamed(byte[] binary, Map<String, Set<String>> named) {
    return keepOnly(binary, (kernel, spec) -> named.getOrDefault(kernel, Set.of()).contains(spec));
  }

  /**
   * One binary of a program from several binaries of it (the same program built in several processes, each
   * with some of its work-group functions): the first's header, program entries and metadata, and every
   * kernel's files from all of them, the first copy of a path kept.
   *
   * @throws IllegalArgumentException if a binary is not a PoCL binary, or they are not of one program's kernels
   */
  static byte[] combine(List<byte[]> binaries) {
    Parsed first = parse(binaries.get(0));
    List<Map<String, FileRecord>> files = new ArrayList<>();
    first.kernels().forEach(k -> {
      Map<String, FileRecord> m = new LinkedHashMap<>();
      k.files().forEach(f -> m.putIfAbsent(f.path(), f));
      files.add(m);
    });
    for (byte[] b : binaries.subList(1, binaries.size())) {
      Parsed other = parse(b);
      List<String> names = other.kernels().stream().map(KernelRecord::name).toList();
      if (!names.equals(first.kernels().stream().map(KernelRecord::name).toList())) {
        throw new IllegalArgumentException("PoCL binaries of different programs: kernels " + names + " and "
            + first.kernels().stream().map(KernelRecord::name).toList());
      }
      for (int k = 0; k < names.size(); k++) {
        Map<String, FileRecord> m = files.get(k);
        other.kernels().get(k).files().forEach(f -> m.putIfAbsent(f.path(), f));
      }
    }
    List<KernelRecord> kernels = new ArrayList<>();
    for (int k = 0; k < first.kernels().size(); k++) {
      KernelRecord r = first.kernels().get(k);
      kernels.add(new KernelRecord(r.name(), r.metadata(), List.copyOf(files.get(k).values())));
    }
    return new Parsed(first.head(), kernels).toBytes();
  }

  /**
   * Takes {@code binary} apart.
   *
   * @throws IllegalArgumentException if it is not a PoCL binary of a known version, or its sizes do not add up
   */
  static Parsed parse(byte[] binary) {
    int version = version(binary);
    ByteBuffer in = ByteBuffer.wrap(binary).order(ByteOrder.LITTLE_ENDIAN).position(MAGIC.length + 8 + 4);
    int kernelCount = in.getInt();
    long flags = in.getLong();
    int rootEntries = in.getInt();
    skip(in, BUILD_HASH_BYTES, "the build hash");
    if (version >= 11 && (flags & HAS_PROGRAM_SCOPE_VARIABLES) != 0) {
      skip(in, 8, "the program-scope variable size");
    }
    for (int i = 0; i < rootEntries; i++) {
      if (in.remaining() < 8) {
        throw new IllegalArgumentException("PoCL program binary ends before root entry " + i);
      }
      skip(in, length(in.getLong(), in, "root entry " + i), "root entry " + i);
    }
    byte[] head = Arrays.copyOf(binary, in.position());
    List<KernelRecord> kernels = new ArrayList<>();
    for (int k = 0; k < kernelCount; k++) {
      kernels.add(kernelRecord(in, binary, k));
    }
    if (in.position() != binary.length) {
      throw new IllegalArgumentException("PoCL program binary of " + binary.length + " bytes has "
          + (binary.length - in.position()) + " bytes after its last kernel record");
    }
    return new Parsed(head, kernels);
  }

  /**
   * The format version of {@code binary}, whose header it checks: the magic, a header's length, a known version.
   *
   * @throws IllegalArgumentException if it is not a PoCL binary of a known version
   */
  private static int version(byte[] binary) {
    if (!isPoclBinary(binary)) {
      throw new IllegalArgumentException("not a PoCL program binary (" + binary.length + " bytes, no 'poclbin' magic)");
    }
    if (binary.length < BUILD_HASH_AT + BUILD_HASH_BYTES) {
      throw new IllegalArgumentException("PoCL program binary of " + binary.length + " bytes ends inside its header");
    }
    int version = ByteBuffer.wrap(binary, MAGIC.length + 8, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
    if (version < 9 || version > 11) {
      throw new IllegalArgumentException("PoCL program binary of format version " + version
          + ": only versions 9 to 11 (PoCL 3.1 to 7.1) are known");
    }
    return version;
  }

  /** Kernel record {@code k}, read from {@code in} at its start: its metadata and its files. */
  private static KernelRecord kernelRecord(ByteBuffer in, byte[] binary, int k) {
    int start = in.position();
    if (in.remaining() < 20) {
      throw new IllegalArgumentException("PoCL program binary ends before kernel record " + k);
    }
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
    List<FileRecord> fileRecords = new ArrayList<>();
    in.position(files);
    while (in.position() < end) {
      int record = in.position();
      String path = string(in, "a file path of kernel " + name);
      if (in.remaining() < 4) {
        throw new IllegalArgumentException("PoCL program binary ends inside file " + path);
      }
      skip(in, length(Integer.toUnsignedLong(in.getInt()), in, "file " + path), "file " + path);
      if (in.position() > end) {
        throw new IllegalArgumentException("file " + path + " runs past kernel " + name + "'s record");
      }
      fileRecords.add(new FileRecord(path, Arrays.copyOfRange(binary, record, in.position())));
    }
    return new KernelRecord(name, Arrays.copyOfRange(binary, start, files), fileRecords);
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
