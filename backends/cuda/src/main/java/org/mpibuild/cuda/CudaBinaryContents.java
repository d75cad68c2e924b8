package org.mpibuild.cuda;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a CUDA binary holds: SASS (machine code) for some architectures, PTX for some virtual ones, and
 * what a GPU of a given architecture does with it: run SASS, or JIT-compile PTX at load. Reads only
 * headers, never decompresses, and never runs a CUDA tool (there is no cuobjdump on a build node).
 *
 * <p>The two formats, as nvcc 13.0 writes them (checked against its {@code -fatbin} and {@code -cubin}
 * output, all integers little-endian):
 *
 * <ul>
 *   <li><b>fatbin</b>: one or more containers, each a 16-byte header (u32 magic {@code 0xBA55ED50}, u16
 *       version 1, u16 header size 16, u64 size of what follows the header) and then entries back to
 *       back. An entry is a header of its own size (64 bytes; 72, 80, 112 or 128 with debug information,
 *       PTX options or sm_100 and newer) followed by its payload:
 *       <pre>
 *   0 u16 kind: 1 PTX, 2 ELF (a cubin: SASS)   24 u16 code version, minor (ELF 8, PTX ISA 0)
 *   2 u16 0x0101                               26 u16 code version, major (ELF 1, PTX ISA 9)
 *   4 u32 entry header size                    28 u32 architecture: 90 is sm_90 or compute_90
 *   8 u64 payload size (padded to 8 bytes)     40 u64 flags: 0x1 64-bit, 0x2 debug, 0x10 Linux,
 *  16 u32 compressed size, 0 if not compressed        0x8000 zstd-compressed payload,
 *  56 u64 uncompressed size, 0 if not compressed      0x100000 arch-specific (sm_90a),
 *                                                     0x200000 family-specific (sm_100f)</pre>
 *   <li><b>cubin</b>: an ELF file with {@code e_machine} 190 (EM_CUDA). It holds SASS for exactly one
 *       architecture, found in {@code e_flags}: bits 8-15 from ELF ABI version 8 on (nvcc 13 writes it
 *       for every architecture, for example {@code 0x06005a04} for sm_90), bits 0-7 before (CUDA 12
 *       wrote {@code 0x005a055a} for sm_90). An arch-specific cubin (sm_90a) has the same e_flags as a
 *       plain one; only a fatbin entry's flags tell them apart.
 * </ul>
 *
 * <p>Which code a GPU uses, as the CUDA compatibility guides describe the driver's choice: SASS for its own
 * architecture; else SASS for an earlier minor revision of its major version (an sm_80 cubin runs on sm_86),
 * unless that SASS is arch-specific; else, after a JIT compile, the newest PTX for a virtual architecture no
 * newer than the GPU (arch-specific PTX only for that very GPU, family-specific PTX only within its major
 * version). Otherwise the GPU cannot load the binary.
 *
 * @param container {@code "fatbin"} or {@code "cubin"}
 * @param sass the SASS the binary holds, in the order found
 * @param ptx the PTX the binary holds, in the order found
 */
record CudaBinaryContents(String container, List<Code> sass, List<Code> ptx) {

  static final int FATBIN_MAGIC = 0xBA55ED50;
  static final int KIND_PTX = 1;
  static final int KIND_ELF = 2;
  static final long FLAG_COMPRESSED_ZSTD = 0x8000L;
  static final long FLAG_COMPRESSED_LZ4 = 0x2000L;
  static final long FLAG_ARCH_SPECIFIC = 0x100000L;
  static final long FLAG_FAMILY_SPECIFIC = 0x200000L;
  static final int EM_CUDA = 190;

  private static final int CONTAINER_HEADER = 16;
  private static final int ENTRY_HEADER_MIN = 64;
  private static final Pattern DEVICE = Pattern.compile("(?:sm_|compute_)?(\\d{2,3})([af]?)");

  CudaBinaryContents {
    sass = List.copyOf(sass);
    ptx = List.copyOf(ptx);
  }

  /**
   * One piece of code: SASS for {@code sm_<arch><variant>} or PTX for {@code compute_<arch><variant>}.
   *
   * @param arch the architecture's number, for example 90
   * @param variant {@code ""}, {@code "a"} (arch-specific) or {@code "f"} (family-specific)
   * @param versionMajor the code version's major part: the PTX ISA version for PTX; -1 if unknown
   * @param versionMinor its minor part; -1 if unknown
   */
  record Code(int arch, String variant, int versionMajor, int versionMinor) {
    String sassName() {
      return "sm_" + arch + variant;
    }

    String ptxName() {
      return "compute_" + arch + variant;
    }

    /** {@code compute_90 (PTX ISA 9.0)}. */
    String ptxDescription() {
      return ptxName() + (versionMajor < 0 ? "" : " (PTX ISA " + versionMajor + "." + versionMinor + ")");
    }

    int major() {
      return arch / 10;
    }

    int minor() {
      return arch % 10;
    }
  }

  /** How a GPU gets code to run from a binary. */
  enum How {
    /** SASS for its own architecture. */
    SASS,
    /** SASS for an earlier minor revision of its major version: runs without compiling. */
    COMPATIBLE_SASS,
    /** No SASS it can run: the driver JIT-compiles PTX at load. */
    JIT_PTX,
    /** Nothing it can run: the load fails. */
    NONE
  }

  /**
   * What a GPU of architecture {@code device} does with the binary.
   *
   * @param device the GPU's architecture, for example {@code sm_86}
   * @param how how it gets code
   * @param code the SASS or PTX it uses; null for {@link How#NONE}
   */
  record LoadPlan(String device, How how, Code code) {
    /** Whether the GPU can load the binary at all. */
    boolean runs() {
      return how != How.NONE;
    }

    /** Whether the GPU must JIT-compile PTX to load the binary. */
    boolean jit() {
      return how == How.JIT_PTX;
    }

    /** One line for a person. */
    String describe() {
      switch (how) {
        case SASS:
          return device + " runs its own SASS";
        case COMPATIBLE_SASS:
          return device + " runs the SASS for " + code.sassName() + " (binary-compatible, no JIT)";
        case JIT_PTX:
          return device + " has no SASS in the binary: it JIT-compiles the PTX " + code.ptxDescription() + " at load";
        default:
          return device + " has neither SASS nor PTX it can JIT-compile in the binary: it cannot load it";
      }
    }
  }

  /** The SASS architectures, by name, in the order found ({@code sm_80}, {@code sm_90a}). */
  List<String> sassNames() {
    return sass.stream().map(Code::sassName).toList();
  }

  /** The PTX virtual architectures, by name, in the order found ({@code compute_90}). */
  List<String> ptxNames() {
    return ptx.stream().map(Code::ptxName).toList();
  }

  /** {@code fatbin with SASS for sm_80, sm_90 and PTX compute_90 (PTX ISA 9.0)}. */
  String summary() {
    StringBuilder b = new StringBuilder(container).append(" with ");
    b.append(sass.isEmpty() ? "no SASS" : "SASS for " + String.join(", ", sassNames()));
    b.append(ptx.isEmpty() ? " and no PTX" : " and PTX " + String.join(", ",
        ptx.stream().map(Code::ptxDescription).toList()));
    return b.toString();
  }

  /**
   * What a GPU of architecture {@code device} does with this binary (see the class comment for the rule).
   *
   * @param device {@code sm_86}, {@code 86} or {@code sm_90a}; anything else cannot load anything
   * @return the plan
   */
  LoadPlan plan(String device) {
    Matcher m = device == null ? null : DEVICE.matcher(device.trim().toLowerCase(Locale.ROOT));
    if (m == null || !m.matches()) {
      return new LoadPlan(String.valueOf(device), How.NONE, null);
    }
    int n = Integer.parseInt(m.group(1));
    int major = n / 10;
    int minor = n % 10;
    for (Code c : sass) {
      if (c.arch() == n) {
        return new LoadPlan(device, How.SASS, c);
      }
    }
    Code compatible = sass.stream()
        .filter(c -> !c.variant().equals("a") && c.major() == major && c.minor() < minor)
        .max(Comparator.comparingInt(Code::arch)).orElse(null);
    if (compatible != null) {
      return new LoadPlan(device, How.COMPATIBLE_SASS, compatible);
    }
    Code jit = ptx.stream()
        .filter(c -> switch (c.variant()) {
          case "a" -> c.arch() == n;
          case "f" -> c.major() == major && c.minor() <= minor;
          default -> c.arch() <= n;
        })
        .max(Comparator.comparingInt(Code::arch)).orElse(null);
    return jit != null ? new LoadPlan(device, How.JIT_PTX, jit) : new LoadPlan(device, How.NONE, null);
  }

  /**
   * What nvcc builds for these architectures with {@link NvccCompiler#targetFlags}: SASS for each, plus
   * the PTX of the last when there are several (a single architecture gives a cubin, without PTX).
   *
   * @param archs parsed architectures ({@link CudaArch#parse})
   * @return the expected contents; PTX versions unknown
   */
  static CudaBinaryContents ofTarget(List<String> archs) {
    List<Code> sass = new ArrayList<>();
    for (String a : archs) {
      sass.add(code(a));
    }
    List<Code> ptx = archs.size() > 1 ? List.of(code(archs.get(archs.size() - 1))) : List.of();
    return new CudaBinaryContents(archs.size() > 1 ? "fatbin" : "cubin", sass, ptx);
  }

  private static Code code(String arch) {
    Matcher m = DEVICE.matcher(arch.trim().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      throw new IllegalArgumentException("'" + arch + "' is not a CUDA architecture such as sm_90");
    }
    return new Code(Integer.parseInt(m.group(1)), m.group(2), -1, -1);
  }

  /**
   * Reads a fatbin or a cubin.
   *
   * @param binary the binary
   * @return what it holds
   * @throws CudaBinaryFormatException if it is neither, or is truncated or inconsistent; the message names
   *     the offset
   */
  static CudaBinaryContents read(byte[] binary) {
    return read(ByteBuffer.wrap(binary));
  }

  /**
   * Reads a fatbin or a cubin lying between the buffer's position and its limit; the buffer itself is not
   * moved, and a direct buffer is read where it lies.
   *
   * @param binary the binary
   * @return what it holds
   * @throws CudaBinaryFormatException if it is neither, or is truncated or inconsistent; the message names
   *     the offset
   */
  static CudaBinaryContents read(ByteBuffer binary) {
    ByteBuffer b = binary.slice().order(ByteOrder.LITTLE_ENDIAN);
    if (b.remaining() >= 4 && b.getInt(0) == FATBIN_MAGIC) {
      return readFatbin(b);
    }
    if (isElf(b, 0, b.limit())) {
      return new CudaBinaryContents("cubin", List.of(new Code(elfArch(b, 0, b.limit()), "", -1, -1)), List.of());
    }
    throw new CudaBinaryFormatException(0, "neither a fatbin (magic 0xBA55ED50) nor a cubin (ELF), "
        + b.limit() + " bytes, starting " + hex(b, 0, Math.min(8, b.limit())));
  }

  /** Reads a fatbin: containers back to back, then nothing but zero padding. */
  private static CudaBinaryContents readFatbin(ByteBuffer b) {
    List<Code> sass = new ArrayList<>();
    List<Code> ptx = new ArrayList<>();
    long at = 0;
    do {
      at = readContainer(b, at, sass, ptx);
    } while (b.limit() - at >= 4 && b.getInt((int) at) == FATBIN_MAGIC); // another container follows
    for (long z = at; z < b.limit(); z++) {
      if (b.get((int) z) != 0) {
        throw new CudaBinaryFormatException(z, "unexpected data after the fatbin's last container");
      }
    }
    return new CudaBinaryContents("fatbin", sass, ptx);
  }

  /**
   * Reads the container at {@code at}, adding its code to {@code sass} and {@code ptx}.
   *
   * @return where the container ends
   */
  private static long readContainer(ByteBuffer b, long at, List<Code> sass, List<Code> ptx) {
    need(b, at, CONTAINER_HEADER, "truncated fatbin header");
    int version = Short.toUnsignedInt(b.getShort((int) at + 4));
    int headerSize = Short.toUnsignedInt(b.getShort((int) at + 6));
    long fatSize = b.getLong((int) at + 8);
    if (version != 1) {
      throw new CudaBinaryFormatException(at + 4, "unknown fatbin version " + version + " (1 expected)");
    }
    if (headerSize < CONTAINER_HEADER) {
      throw new CudaBinaryFormatException(at + 6, "fatbin header size " + headerSize + " is below 16");
    }
    need(b, at, headerSize, "truncated fatbin header");
    long entries = at + headerSize;
    if (fatSize < 0 || fatSize > b.limit() - entries) {
      throw new CudaBinaryFormatException(at + 8, "fatbin size " + Long.toUnsignedString(fatSize) + " runs past the end"
          + " of the binary (" + (b.limit() - entries) + " bytes follow the header)");
    }
    long end = entries + fatSize;
    for (long e = entries; e < end; ) {
      e = readEntry(b, e, end, sass, ptx);
    }
    return end;
  }

  /**
   * Reads the entry at {@code e} of a container ending at {@code end}, adding its code to {@code sass} or
   * {@code ptx} (entries of other kinds are skipped).
   *
   * @return where the next entry begins
   */
  private static long readEntry(ByteBuffer b, long e, long end, List<Code> sass, List<Code> ptx) {
    if (end - e < ENTRY_HEADER_MIN) {
      throw new CudaBinaryFormatException(e, "truncated fatbin entry header: " + ENTRY_HEADER_MIN
          + " bytes needed, " + (end - e) + " left in the container");
    }
    int kind = Short.toUnsignedInt(b.getShort((int) e));
    long entryHeader = Integer.toUnsignedLong(b.getInt((int) e + 4));
    long payload = b.getLong((int) e + 8);
    if (entryHeader < ENTRY_HEADER_MIN || entryHeader > end - e) {
      throw new CudaBinaryFormatException(e + 4, "fatbin entry header size " + entryHeader + " is not between "
          + ENTRY_HEADER_MIN + " and the " + (end - e) + " bytes left in the container");
    }
    if (payload < 0 || payload > end - e - entryHeader) {
      throw new CudaBinaryFormatException(e + 8, "fatbin entry payload of " + Long.toUnsignedString(payload)
          + " bytes runs past the container's end (" + (end - e - entryHeader) + " bytes left)");
    }
    if (kind == KIND_ELF) {
      Code code = entryCode(b, e);
      checkCubin(b, e, e + entryHeader, payload, code.arch());
      sass.add(code);
    } else if (kind == KIND_PTX) {
      ptx.add(entryCode(b, e));
    }
    return e + entryHeader + payload;
  }

  /** The architecture, variant and code version in the header of the PTX or ELF entry at {@code e}. */
  private static Code entryCode(ByteBuffer b, long e) {
    int minor = Short.toUnsignedInt(b.getShort((int) e + 24));
    int major = Short.toUnsignedInt(b.getShort((int) e + 26));
    long arch = Integer.toUnsignedLong(b.getInt((int) e + 28));
    long flags = b.getLong((int) e + 40);
    if (arch < 10 || arch > 999) {
      throw new CudaBinaryFormatException(e + 28, "fatbin entry architecture " + arch + " is not a CUDA"
          + " architecture");
    }
    String variant = (flags & FLAG_ARCH_SPECIFIC) != 0 ? "a" : (flags & FLAG_FAMILY_SPECIFIC) != 0 ? "f" : "";
    return new Code((int) arch, variant, major, minor);
  }

  /**
   * Checks that the cubin of the ELF entry at {@code e}, whose payload starts at {@code data}, is for the
   * architecture its entry names; a compressed payload is not checked.
   */
  private static void checkCubin(ByteBuffer b, long e, long data, long payload, int arch) {
    long flags = b.getLong((int) e + 40);
    boolean compressed = (flags & (FLAG_COMPRESSED_ZSTD | FLAG_COMPRESSED_LZ4)) != 0;
    if (!compressed && isElf(b, data, data + payload)) {
      int elf = elfArch(b, data, data + payload);
      if (elf != arch) {
        throw new CudaBinaryFormatException(data, "fatbin entry at offset " + e + " is for sm_" + arch
            + " but its cubin's ELF header says sm_" + elf);
      }
    }
  }

  private static boolean isElf(ByteBuffer b, long from, long to) {
    return to - from >= 4 && b.get((int) from) == 0x7f && b.get((int) from + 1) == 'E' && b.get((int) from + 2) == 'L'
        && b.get((int) from + 3) == 'F';
  }

  /** The SASS architecture of the cubin between {@code from} and {@code to}, from its ELF header. */
  private static int elfArch(ByteBuffer b, long from, long to) {
    if (to - from < 16) {
      throw new CudaBinaryFormatException(from, "truncated ELF identification: 16 bytes needed, " + (to - from)
          + " present");
    }
    int elfClass = b.get((int) from + 4);
    int data = b.get((int) from + 5);
    int abiVersion = Byte.toUnsignedInt(b.get((int) from + 8));
    if (elfClass != 1 && elfClass != 2) {
      throw new CudaBinaryFormatException(from + 4, "unknown ELF class " + elfClass);
    }
    if (data != 1) {
      throw new CudaBinaryFormatException(from + 5, "ELF data encoding " + data + " is not little-endian");
    }
    int headerSize = elfClass == 2 ? 64 : 52;
    if (to - from < headerSize) {
      throw new CudaBinaryFormatException(from, "truncated ELF header: " + headerSize + " bytes needed, " + (to - from)
          + " present");
    }
    int machine = Short.toUnsignedInt(b.getShort((int) from + 18));
    if (machine != EM_CUDA) {
      throw new CudaBinaryFormatException(from + 18, "ELF machine " + machine + " is not CUDA (" + EM_CUDA + ")");
    }
    int flagsAt = elfClass == 2 ? 48 : 36;
    int flags = b.getInt((int) from + flagsAt);
    // ELF ABI version 8 (nvcc 13 for every architecture; CUDA 12 already for sm_100 and newer, whose e_flags
    // have a nonzero top byte) keeps the architecture in bits 8-15; earlier versions in bits 0-7.
    boolean newLayout = abiVersion >= 8 || (flags >>> 24) != 0;
    int arch = newLayout ? (flags >>> 8) & 0xff : flags & 0xff;
    if (arch < 10) {
      throw new CudaBinaryFormatException(from + flagsAt, "ELF e_flags 0x" + Integer.toHexString(flags)
          + " name no CUDA architecture (ELF ABI version " + abiVersion + ")");
    }
    return arch;
  }

  private static void need(ByteBuffer b, long at, long n, String what) {
    if (b.limit() - at < n) {
      throw new CudaBinaryFormatException(at, what + ": " + n + " bytes needed, " + (b.limit() - at) + " present");
    }
  }

  private static String hex(ByteBuffer b, int from, int to) {
    StringBuilder s = new StringBuilder();
    for (int i = from; i < to; i++) {
      s.append(String.format("%02x", b.get(i)));
    }
    return s.length() == 0 ? "(empty)" : s.toString();
  }
}
