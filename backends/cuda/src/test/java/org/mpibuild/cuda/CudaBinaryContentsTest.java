package org.mpibuild.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The fatbin and cubin reader on binaries made here byte by byte, following the layout seen in nvcc 13.0's
 * output (see {@link CudaBinaryContents}): what it finds, the load decision for each GPU, and corrupt or
 * truncated input, which must give a {@link CudaBinaryFormatException} naming the offset, never another
 * exception. {@link CudaFatbinCompileTest} checks the same reader on nvcc's real output.
 */
class CudaBinaryContentsTest {

  /** A 64-bit cubin header as nvcc 13 writes it: ELF ABI version 8, the architecture in e_flags bits 8-15. */
  static byte[] cubin(int arch) {
    return elf(8, 0x06000004 | (arch << 8), 64 + 32);
  }

  /** A 64-bit CUDA ELF header with these ABI version and e_flags, padded to {@code size} bytes. */
  static byte[] elf(int abiVersion, int eFlags, int size) {
    ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    b.put(new byte[] {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x41, (byte) abiVersion});
    b.putShort(16, (short) 2); // ET_EXEC
    b.putShort(18, (short) 190); // EM_CUDA
    b.putInt(20, 1);
    b.putInt(48, eFlags);
    return b.array();
  }

  /** One fatbin entry: a 64-byte header (or longer) and its payload, padded to 8 bytes. */
  record Entry(int kind, int arch, int major, int minor, long flags, int headerSize, byte[] payload) {
    static Entry sass(int arch) {
      return new Entry(2, arch, 1, 8, 0x11, arch >= 100 ? 112 : 64, cubin(arch));
    }

    static Entry ptx(int arch) {
      byte[] zstd = {0x28, (byte) 0xb5, 0x2f, (byte) 0xfd, 1, 2, 3, 4, 5, 6, 7};
      return new Entry(1, arch, 9, 0, 0x8011, 80, zstd);
    }
  }

  static byte[] fatbin(Entry... entries) {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    for (Entry e : entries) {
      int padded = (e.payload().length + 7) & ~7;
      boolean compressed = (e.flags() & CudaBinaryContents.FLAG_COMPRESSED_ZSTD) != 0;
      ByteBuffer h = ByteBuffer.allocate(e.headerSize()).order(ByteOrder.LITTLE_ENDIAN);
      h.putShort(0, (short) e.kind()).putShort(2, (short) 0x0101).putInt(4, e.headerSize()).putLong(8, padded);
      h.putInt(16, compressed ? e.payload().length : 0);
      h.putShort(24, (short) e.minor()).putShort(26, (short) e.major()).putInt(28, e.arch()).putLong(40, e.flags());
      h.putLong(56, compressed ? 823 : 0);
      body.writeBytes(h.array());
      body.writeBytes(Arrays.copyOf(e.payload(), padded));
    }
    ByteBuffer head = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
    head.putInt(CudaBinaryContents.FATBIN_MAGIC).putShort((short) 1).putShort((short) 16).putLong(body.size());
    ByteArrayOutputStream all = new ByteArrayOutputStream();
    all.writeBytes(head.array());
    all.writeBytes(body.toByteArray());
    return all.toByteArray();
  }

  static final byte[] SM80_SM90_PTX90 = fatbin(Entry.sass(80), Entry.sass(90), Entry.ptx(90));

  static CudaBinaryFormatException corrupt(byte[] binary) {
    return assertThrows(CudaBinaryFormatException.class, () -> CudaBinaryContents.read(binary));
  }

  static byte[] patch(byte[] binary, int at, long value, int width) {
    byte[] copy = binary.clone();
    ByteBuffer b = ByteBuffer.wrap(copy).order(ByteOrder.LITTLE_ENDIAN);
    switch (width) {
      case 2 -> b.putShort(at, (short) value);
      case 4 -> b.putInt(at, (int) value);
      default -> b.putLong(at, value);
    }
    return copy;
  }

  @Test
  void aFatbinListsItsSassAndPtx() {
    CudaBinaryContents c = CudaBinaryContents.read(SM80_SM90_PTX90);
    assertEquals("fatbin", c.container());
    assertEquals(List.of("sm_80", "sm_90"), c.sassNames());
    assertEquals(List.of("compute_90"), c.ptxNames());
    assertEquals(9, c.ptx().get(0).versionMajor());
    assertEquals("fatbin with SASS for sm_80, sm_90 and PTX compute_90 (PTX ISA 9.0)", c.summary());
  }

  @Test
  void longerEntryHeadersAndVariantFlagsAreRead() {
    byte[] b = fatbin(new Entry(2, 90, 1, 8, 0x100011, 64, cubin(90)), new Entry(2, 100, 1, 8, 0x1200011, 112, cubin(100)),
        new Entry(2, 120, 1, 8, 0x13, 72, cubin(120)), new Entry(1, 120, 9, 0, 0x13, 128, ".version 9.0\n".getBytes()),
        new Entry(0x40, 0, 0, 0, 0, 64, new byte[3]));
    CudaBinaryContents c = CudaBinaryContents.read(b);
    assertEquals(List.of("sm_90a", "sm_100f", "sm_120"), c.sassNames());
    assertEquals(List.of("compute_120"), c.ptxNames(), "an entry of unknown kind is skipped");
  }

  @Test
  void aCubinHoldsSassForTheArchitectureOfItsElfFlags() {
    CudaBinaryContents c = CudaBinaryContents.read(cubin(86));
    assertEquals("cubin", c.container());
    assertEquals(List.of("sm_86"), c.sassNames());
    assertEquals(List.of(), c.ptxNames());
    assertEquals("cubin with SASS for sm_86 and no PTX", c.summary());
    // CUDA 12's encoding (ELF ABI version 7): the architecture in the low byte, 0x5a055a for sm_90.
    assertEquals(List.of("sm_90"), CudaBinaryContents.read(elf(7, 0x5a055a, 64)).sassNames());
    // nvcc 13's values, seen in its -cubin output.
    assertEquals(List.of("sm_75"), CudaBinaryContents.read(elf(8, 0x6004b04, 64)).sassNames());
    assertEquals(List.of("sm_121"), CudaBinaryContents.read(elf(8, 0x6007902, 64)).sassNames());
  }

  @Test
  void theLoadDecisionFollowsTheDriversRules() {
    CudaBinaryContents c = CudaBinaryContents.read(SM80_SM90_PTX90);
    assertEquals(CudaBinaryContents.How.SASS, c.plan("sm_80").how());
    assertEquals(CudaBinaryContents.How.SASS, c.plan("sm_90").how());
    CudaBinaryContents.LoadPlan ampere = c.plan("sm_86");
    assertEquals(CudaBinaryContents.How.COMPATIBLE_SASS, ampere.how());
    assertEquals("sm_80", ampere.code().sassName());
    assertFalse(ampere.jit());
    CudaBinaryContents.LoadPlan blackwell = c.plan("sm_100");
    assertTrue(blackwell.jit());
    assertEquals("compute_90", blackwell.code().ptxName());
    assertTrue(blackwell.describe().contains("JIT-compiles the PTX compute_90 (PTX ISA 9.0)"), blackwell.describe());
    assertEquals(CudaBinaryContents.How.NONE, c.plan("sm_75").how(), "PTX for compute_90 cannot run on sm_75");
    assertFalse(c.plan("none").runs());
    // Arch-specific SASS runs on its own GPU only; arch-specific PTX JIT-compiles for its own GPU only.
    CudaBinaryContents a = CudaBinaryContents.read(fatbin(new Entry(2, 90, 1, 8, 0x100011, 64, cubin(90)),
        new Entry(1, 90, 9, 0, 0x100011, 80, new byte[8])));
    assertEquals(CudaBinaryContents.How.SASS, a.plan("sm_90").how());
    assertEquals(CudaBinaryContents.How.NONE, a.plan("sm_100").how());
    CudaBinaryContents a86 = CudaBinaryContents.read(fatbin(new Entry(2, 80, 1, 8, 0x100011, 64, cubin(80))));
    assertEquals(CudaBinaryContents.How.NONE, a86.plan("sm_86").how());
  }

  @Test
  void theExpectedContentsOfABuildTargetMatchTheNvccFlags() {
    CudaBinaryContents two = CudaBinaryContents.ofTarget(CudaArch.parse("sm_80,sm_90"));
    assertEquals(List.of("sm_80", "sm_90"), two.sassNames());
    assertEquals(List.of("compute_90"), two.ptxNames());
    assertEquals(List.of(), CudaBinaryContents.ofTarget(CudaArch.parse("sm_90")).ptxNames(), "a cubin has no PTX");
    assertTrue(CudaArch.runs("sm_80", "sm_86"), "an sm_80 cubin runs on sm_86");
    assertFalse(CudaArch.runs("sm_90", "sm_100"), "a cubin carries no PTX to JIT-compile");
    assertFalse(CudaArch.runs("sm_80,sm_90", "sm_75"));
  }

  @Test
  void emptyAndForeignInputIsRefusedClearly() {
    assertTrue(corrupt(new byte[0]).getMessage().contains("neither a fatbin"), corrupt(new byte[0]).getMessage());
    CudaBinaryFormatException e = corrupt(".version 9.0\n.target sm_90\n".getBytes());
    assertEquals(0, e.offset());
    assertTrue(e.getMessage().contains("2e76657273696f6e"), "names the first bytes: " + e.getMessage());
    byte[] x86 = cubin(80);
    x86[18] = 62;
    e = corrupt(x86);
    assertEquals(18, e.offset());
    assertTrue(e.getMessage().contains("ELF machine 62 is not CUDA"), e.getMessage());
  }

  @Test
  void truncatedInputNamesTheOffset() {
    CudaBinaryFormatException e = corrupt(Arrays.copyOf(SM80_SM90_PTX90, 10));
    assertEquals(0, e.offset());
    assertTrue(e.getMessage().contains("truncated fatbin header: 16 bytes needed, 10 present at offset 0"),
        e.getMessage());
    e = corrupt(Arrays.copyOf(SM80_SM90_PTX90, SM80_SM90_PTX90.length - 1));
    assertEquals(8, e.offset());
    assertTrue(e.getMessage().contains("runs past the end of the binary"), e.getMessage());
    e = corrupt(Arrays.copyOf(cubin(80), 40));
    assertTrue(e.getMessage().contains("truncated ELF header: 64 bytes needed, 40 present"), e.getMessage());
    // Every prefix of a fatbin is refused with this exception, never another; so is every prefix of a cubin
    // shorter than its ELF header.
    for (int n = 0; n < SM80_SM90_PTX90.length; n++) {
      CudaBinaryFormatException p = corrupt(Arrays.copyOf(SM80_SM90_PTX90, n));
      assertTrue(p.offset() >= 0 && p.offset() <= n, p.getMessage());
    }
    byte[] cubin = cubin(90);
    for (int n = 0; n < cubin.length; n++) {
      byte[] prefix = Arrays.copyOf(cubin, n);
      if (n < 64) {
        CudaBinaryFormatException p = corrupt(prefix);
        assertTrue(p.offset() >= 0 && p.offset() <= n, p.getMessage());
      } else {
        assertEquals(List.of("sm_90"), CudaBinaryContents.read(prefix).sassNames());
      }
    }
  }

  @Test
  void inconsistentSizesNameTheOffset() {
    // Entry header size below 64, at 16 + 4.
    CudaBinaryFormatException e = corrupt(patch(SM80_SM90_PTX90, 16 + 4, 8, 4));
    assertEquals(20, e.offset());
    assertTrue(e.getMessage().contains("entry header size 8"), e.getMessage());
    // A payload size that is negative as a signed 64-bit number.
    e = corrupt(patch(SM80_SM90_PTX90, 16 + 8, -1L, 8));
    assertEquals(24, e.offset());
    assertTrue(e.getMessage().contains("18446744073709551615 bytes runs past"), e.getMessage());
    // A container size larger than the file.
    e = corrupt(patch(SM80_SM90_PTX90, 8, Long.MAX_VALUE, 8));
    assertEquals(8, e.offset());
    // A container size that stops inside an entry header.
    e = corrupt(patch(SM80_SM90_PTX90, 8, 40, 8));
    assertEquals(16, e.offset());
    assertTrue(e.getMessage().contains("truncated fatbin entry header"), e.getMessage());
    // An unknown container version, a header size below 16.
    assertEquals(4, corrupt(patch(SM80_SM90_PTX90, 4, 2, 2)).offset());
    assertEquals(6, corrupt(patch(SM80_SM90_PTX90, 6, 4, 2)).offset());
    // An entry whose architecture disagrees with its cubin's ELF header.
    e = corrupt(patch(SM80_SM90_PTX90, 16 + 28, 86, 4));
    assertEquals(16 + 64, e.offset());
    assertTrue(e.getMessage().contains("is for sm_86 but its cubin's ELF header says sm_80"), e.getMessage());
    // Data after the last container.
    byte[] trailing = Arrays.copyOf(SM80_SM90_PTX90, SM80_SM90_PTX90.length + 8);
    assertEquals(List.of("sm_80", "sm_90"), CudaBinaryContents.read(trailing).sassNames(), "zero padding is fine");
    trailing[trailing.length - 3] = 7;
    e = corrupt(trailing);
    assertEquals(trailing.length - 3, e.offset());
    assertTrue(e.getMessage().contains("unexpected data after the fatbin's last container"), e.getMessage());
  }

  @Test
  void twoContainersAreBothRead() {
    byte[] a = fatbin(Entry.sass(80));
    byte[] b = fatbin(Entry.sass(90), Entry.ptx(90));
    byte[] both = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, both, a.length, b.length);
    CudaBinaryContents c = CudaBinaryContents.read(both);
    assertEquals(List.of("sm_80", "sm_90"), c.sassNames());
    assertEquals(List.of("compute_90"), c.ptxNames());
  }

  @Test
  void aDirectBufferIsReadWhereItLiesAndNotMoved() {
    ByteBuffer direct = ByteBuffer.allocateDirect(SM80_SM90_PTX90.length + 5);
    direct.position(5);
    direct.put(SM80_SM90_PTX90);
    direct.position(5);
    CudaBinaryContents c = CudaBinaryContents.read(direct);
    assertEquals(List.of("sm_80", "sm_90"), c.sassNames());
    assertEquals(5, direct.position());
  }

  @Test
  void randomDamageNeverEscapesAsAnotherException() {
    Random random = new Random(24);
    for (int i = 0; i < 20000; i++) {
      byte[] b = SM80_SM90_PTX90.clone();
      int flips = 1 + random.nextInt(4);
      for (int f = 0; f < flips; f++) {
        // Mostly in the headers, where the sizes are.
        int at = random.nextInt(4) == 0 ? random.nextInt(b.length) : random.nextInt(Math.min(b.length, 200));
        b[at] = (byte) random.nextInt(256);
      }
      byte[] cut = random.nextInt(3) == 0 ? Arrays.copyOf(b, random.nextInt(b.length + 1)) : b;
      try {
        CudaBinaryContents.read(cut);
      } catch (CudaBinaryFormatException expected) {
        assertTrue(expected.offset() >= 0 && expected.offset() <= cut.length, expected.getMessage());
      } catch (RuntimeException other) {
        throw new AssertionError("damage #" + i + " gave " + other, other);
      }
    }
  }

  @Test
  void theLoadWarningNamesTheArchitectureAndThePtx() {
    CudaBinaryContents c = CudaBinaryContents.read(SM80_SM90_PTX90);
    assertNull(ModuleLoader.loadWarning(c, "sm_90"));
    assertNull(ModuleLoader.loadWarning(c, "sm_86"), "binary-compatible SASS: no JIT");
    String jit = ModuleLoader.loadWarning(c, "sm_100");
    assertTrue(jit.contains("this GPU (sm_100) has no SASS") && jit.contains("JIT-compiles the PTX compute_90"), jit);
    String none = ModuleLoader.loadWarning(c, "sm_75");
    assertTrue(none.contains("sm_75") && none.contains("the load will fail"), none);
  }
}
