package org.mpibuild.opencl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link PoclBinary#keepOnly} on binaries written here in PoCL's layout (pocl_binary.c, versions 9 and 11). */
class PoclBinaryTest {
  /** Writes a PoCL binary: kernels in order, each with its metadata bytes and its files (path to content). */
  static byte[] binary(int version, Map<String, Map<String, String>> kernels) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(PoclBinary.MAGIC);
    out.writeBytes(le(8).putLong(0x1234_5678_9abcL).array()); // device id
    out.writeBytes(le(4).putInt(version).array());
    out.writeBytes(le(4).putInt(kernels.size()).array());
    long flags = version >= 11 ? 2 : 0;
    out.writeBytes(le(8).putLong(flags | (4L << 32)).array());
    out.writeBytes(le(4).putInt(1).array()); // root entries
    byte[] hash = new byte[41];
    Arrays.fill(hash, (byte) 'a');
    out.writeBytes(hash);
    if (version >= 11) {
      out.writeBytes(le(8).putLong(0).array());
    }
    byte[] root = file("/program.bc", "bitcode");
    out.writeBytes(le(8).putLong(root.length).array());
    out.writeBytes(root);
    kernels.forEach((name, files) -> {
      ByteArrayOutputStream meta = new ByteArrayOutputStream();
      meta.writeBytes(le(4).putInt(5).array()); // arginfo bytes
      meta.writeBytes(string(name));
      meta.writeBytes("metadata of ".concat(name).getBytes(StandardCharsets.UTF_8));
      ByteArrayOutputStream fs = new ByteArrayOutputStream();
      files.forEach((path, content) -> fs.writeBytes(file(path, content)));
      out.writeBytes(le(8).putLong(16L + meta.size() + fs.size()).array());
      out.writeBytes(le(8).putLong(fs.size()).array());
      out.writeBytes(meta.toByteArray());
      out.writeBytes(fs.toByteArray());
    });
    return out.toByteArray();
  }

  static ByteBuffer le(int n) {
    return ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
  }

  static byte[] string(String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(4 + b.length).order(ByteOrder.LITTLE_ENDIAN).putInt(b.length).put(b).array();
  }

  static byte[] file(String path, String content) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(string(path));
    out.writeBytes(string(content));
    return out.toByteArray();
  }

  static Map<String, Map<String, String>> kernels(String... nameThenFiles) {
    Map<String, Map<String, String>> out = new LinkedHashMap<>();
    Map<String, String> current = null;
    for (String s : nameThenFiles) {
      if (!s.startsWith("/")) {
        current = new LinkedHashMap<>();
        out.put(s, current);
      } else {
        current.put(s, "code of " + s);
      }
    }
    return out;
  }

  @ParameterizedTest
  @ValueSource(ints = {9, 11})
  void keepsTheNamedFunctionsAndEverythingElseOfTheBinaryAsItWas(int version) {
    byte[] full = binary(version, kernels(
        "mm_0", "/mm_0/0-0-0/mm_0.so", "/mm_0/4-4-1-goffs0-smallgrid/mm_0.so", "/mm_0/8-8-1-goffs0-smallgrid/mm_0.so",
        "mm_1", "/mm_1/0-0-0/mm_1.so", "/mm_1/4-4-1-goffs0-smallgrid/mm_1.so", "/mm_1/8-8-1-goffs0-smallgrid/mm_1.so",
        "plain", "/plain/0-0-0/plain.so", "/plain/notes.txt"));
    byte[] kept = PoclBinary.keepOnly(full, (kernel, spec) ->
        kernel.equals("mm_0") && spec.startsWith("4-4-1") || kernel.equals("mm_1") && spec.startsWith("8-8-1"));
    byte[] expected = binary(version, kernels(
        "mm_0", "/mm_0/4-4-1-goffs0-smallgrid/mm_0.so",
        "mm_1", "/mm_1/8-8-1-goffs0-smallgrid/mm_1.so",
        "plain", "/plain/notes.txt"));
    assertArrayEquals(expected, kept, "the records, struct_size and binaries_size as PoCL would have written them");
    assertArrayEquals(full, PoclBinary.keepOnly(full, (kernel, spec) -> true));
  }

  @ParameterizedTest
  @ValueSource(ints = {9, 11})
  void binariesOfOneProgramCombineIntoOneWithEveryKernelsFiles(int version) {
    byte[] a = binary(version, kernels("k0", "/k0/1-1-1/k0.so", "k1"));
    byte[] b = binary(version, kernels("k0", "k1", "/k1/2-1-1/k1.so"));
    byte[] c = binary(version, kernels("k0", "/k0/1-1-1/k0.so", "/k0/4-1-1/k0.so", "k1"));
    assertArrayEquals(binary(version, kernels("k0", "/k0/1-1-1/k0.so", "/k0/4-1-1/k0.so", "k1", "/k1/2-1-1/k1.so")),
        PoclBinary.combine(List.of(a, b, c)));
    byte[] other = binary(version, kernels("x0", "k1"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PoclBinary.combine(List.of(a, other)));
    assertTrue(e.getMessage().contains("different programs"), e.getMessage());
  }

  @ParameterizedTest
  @ValueSource(ints = {8, 12})
  void anUnknownVersionIsRefusedByNumber(int version) {
    byte[] b = binary(version, kernels("k", "/k/0-0-0/k.so"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PoclBinary.keepOnly(b, (k, s) -> true));
    assertTrue(e.getMessage().contains("format version " + version), e.getMessage());
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 7, 20, 60})
  void aTruncatedBinaryIsRefused(int cut) {
    byte[] full = binary(9, kernels("k", "/k/0-0-0/k.so", "/k/1-1-1/k.so"));
    byte[] b = Arrays.copyOf(full, full.length - cut);
    assertThrows(IllegalArgumentException.class, () -> PoclBinary.keepOnly(b, (k, s) -> true));
  }

  @org.junit.jupiter.api.Test
  void aFileThatClaimsMoreThanItsRecordIsRefused() {
    byte[] full = binary(9, kernels("k", "/k/0-0-0/k.so", "/k/1-1-1/k.so"));
    List<Integer> at = new ArrayList<>();
    byte[] needle = string("code of /k/0-0-0/k.so");
    for (int i = 0; i + needle.length <= full.length; i++) {
      if (Arrays.equals(full, i, i + needle.length, needle, 0, needle.length)) {
        at.add(i);
      }
    }
    assertEquals(1, at.size());
    ByteBuffer.wrap(full).order(ByteOrder.LITTLE_ENDIAN).putInt(at.get(0), 1 << 20);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PoclBinary.keepOnly(full, (k, s) -> true));
    assertTrue(e.getMessage().contains("1048576"), e.getMessage());
  }

  @org.junit.jupiter.api.Test
  void somethingElseIsNotAPoclBinary() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> PoclBinary.keepOnly("\u007fELF and so on".getBytes(StandardCharsets.US_ASCII), (k, s) -> true));
    assertTrue(e.getMessage().startsWith("not a PoCL program binary"), e.getMessage());
  }
}
