package org.mpibuild.opencl;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;

/**
 * A shared library that PoCL takes for a built work-group function of every kernel it names, written here in a few
 * microseconds instead of compiled: an ELF object whose dynamic symbol table holds {@code _pocl_kernel_NAME_workgroup}
 * for each name, each a function that only returns. PoCL looks for a built function before it builds one, loads the
 * file and finds its symbol ({@code pocl_check_kernel_dlhandle_cache}: {@code dlopen}, {@code dlsym}), so a link to
 * this library keeps PoCL from generating a function nobody named. Nothing ever calls these functions: the binary
 * that carries them is stripped of them ({@link PoclBinary#keepOnly}) before any rank loads it.
 *
 * <p>The object is the least that the dynamic loader of glibc and musl loads: an ELF header, a read-and-execute
 * segment (the symbols, their names, a SysV hash table of one bucket, the code), a read-write segment for the dynamic
 * section (which older loaders adjust in place), and a non-executable stack. It is made for the processor this JVM
 * runs on, where that is x86-64 or AArch64; elsewhere there is none ({@link #machine}) and the compile process makes
 * its stand-ins by compiling empty kernels.
 */
final class StandInLibrary {
  private StandInLibrary() {}

  private static final int EM_X86_64 = 62;
  private static final int EM_AARCH64 = 183;
  /** The segments' alignment: the largest page size of either processor (64 KiB on AArch64). */
  private static final long ALIGN = 0x10000;
  private static final int EHDR = 64;
  private static final int PHDR = 56;
  private static final int SEGMENTS = 4;
  private static final int SYM = 24;

  /** The ELF machine of the processor this JVM runs on, where stand-ins can be written for it. */
  static OptionalInt machine() {
    return machine(System.getProperty("os.arch", ""));
  }

  static OptionalInt machine(String osArch) {
    return switch (osArch.toLowerCase(Locale.ROOT)) {
      case "amd64", "x86_64" -> OptionalInt.of(EM_X86_64);
      case "aarch64", "arm64" -> OptionalInt.of(EM_AARCH64);
      default -> OptionalInt.empty();
    };
  }

  /** The symbol PoCL looks up for a kernel's work-group function. */
  static String symbol(String kernel) {
    return "_pocl_kernel_" + kernel + "_workgroup";
  }

  /**
   * The library for {@code kernels} on {@code machine} ({@link #machine}).
   *
   * @throws IllegalArgumentException for a machine other than x86-64 or AArch64, or no kernels
   */
  static byte[] write(List<String> kernels, int machine) {
    byte[] ret = switch (machine) {
      case EM_X86_64 -> new byte[] {(byte) 0xc3};
      case EM_AARCH64 -> new byte[] {(byte) 0xc0, 0x03, 0x5f, (byte) 0xd6};
      default -> throw new IllegalArgumentException("no stand-in library for ELF machine " + machine);
    };
    if (kernels.isEmpty()) {
      throw new IllegalArgumentException("a stand-in library needs at least one kernel");
    }
    byte[] names = strings(kernels);
    int symbols = kernels.size() + 1;
    int symtab = EHDR + SEGMENTS * PHDR;
    int strtab = symtab + symbols * SYM;
    int hash = align(strtab + names.length, 8);
    int text = align(hash + 4 * (2 + 1 + symbols), 16);
    int dynamic = align(text + ret.length, 16);
    int dynamicSize = 6 * 16;
    long dynamicAddress = ALIGN + dynamic;

    ByteBuffer b = ByteBuffer.allocate(dynamic + dynamicSize).order(ByteOrder.LITTLE_ENDIAN);
    header(b, machine);
    segment(b, 1, 5, 0, 0, dynamic); // PT_LOAD, read and execute: everything but the dynamic section
    segment(b, 1, 6, dynamic, dynamicAddress, dynamicSize); // PT_LOAD, read and write
    segment(b, 2, 6, dynamic, dynamicAddress, dynamicSize); // PT_DYNAMIC
    segment(b, 0x6474e551, 6, 0, 0, 0); // PT_GNU_STACK: no executable stack (its absence would ask for one)
    b.position(symtab + SYM); // symbol 0 is the null symbol
    int name = 1;
    for (String k : kernels) {
      b.putInt(name).put((byte) 0x12).put((byte) 0).putShort((short) 1).putLong(text).putLong(ret.length);
      name += symbol(k).getBytes(StandardCharsets.UTF_8).length + 1;
    }
    b.position(strtab).put(names);
    b.position(hash).putInt(1).putInt(symbols).putInt(1).putInt(0); // one bucket, starting at symbol 1
    for (int s = 1; s < symbols; s++) {
      b.putInt(s + 1 < symbols ? s + 1 : 0);
    }
    b.position(text).put(ret);
    b.position(dynamic);
    dyn(b, 4, hash); // DT_HASH
    dyn(b, 5, strtab); // DT_STRTAB
    dyn(b, 6, symtab); // DT_SYMTAB
    dyn(b, 10, names.length); // DT_STRSZ
    dyn(b, 11, SYM); // DT_SYMENT
    dyn(b, 0, 0); // DT_NULL
    return b.array();
  }

  private static byte[] strings(List<String> kernels) {
    StringBuilder s = new StringBuilder("\0");
    kernels.forEach(k -> s.append(symbol(k)).append('\0'));
    return s.toString().getBytes(StandardCharsets.UTF_8);
  }

  private static void header(ByteBuffer b, int machine) {
    b.put(new byte[] {0x7f, 'E', 'L', 'F', 2, 1, 1, 0}).putLong(0); // 64-bit, little-endian, version 1, System V
    b.putShort((short) 3).putShort((short) machine).putInt(1); // ET_DYN, machine, version
    b.putLong(0).putLong(EHDR).putLong(0); // entry, program headers, no section headers
    b.putInt(0).putShort((short) EHDR).putShort((short) PHDR).putShort((short) SEGMENTS);
    b.putShort((short) 64).putShort((short) 0).putShort((short) 0);
  }

  private static void segment(ByteBuffer b, int type, int flags, long offset, long address, long size) {
    b.putInt(type).putInt(flags).putLong(offset).putLong(address).putLong(address).putLong(size).putLong(size)
        .putLong(type == 1 ? ALIGN : 8);
  }

  private static void dyn(ByteBuffer b, long tag, long value) {
    b.putLong(tag).putLong(value);
  }

  private static int align(int n, int to) {
    return (n + to - 1) / to * to;
  }
}
