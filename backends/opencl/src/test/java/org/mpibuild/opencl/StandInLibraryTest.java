package org.mpibuild.opencl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.jocl.CL;
import org.jocl.cl_program;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StandInLibraryTest {
  @Test
  void machinesAreThoseItIsMadeFor() {
    assertEquals(OptionalInt.of(62), StandInLibrary.machine("amd64"));
    assertEquals(OptionalInt.of(62), StandInLibrary.machine("x86_64"));
    assertEquals(OptionalInt.of(183), StandInLibrary.machine("aarch64"));
    assertEquals(OptionalInt.empty(), StandInLibrary.machine("riscv64"));
    assertEquals(OptionalInt.empty(), StandInLibrary.machine("ppc64le"));
    assertThrows(IllegalArgumentException.class, () -> StandInLibrary.write(List.of("k"), 243));
    assertThrows(IllegalArgumentException.class, () -> StandInLibrary.write(List.of(), 62));
  }

  /** What a dynamic loader reads: the header, the dynamic section, and each symbol found through the hash table. */
  @Test
  void everyKernelsSymbolIsFoundThroughTheHashTable() {
    List<String> kernels = List.of("mm_0", "mm_1", "a_rather_long_kernel_name_of_sixty_or_more_characters_x");
    for (int machine : new int[] {62, 183}) {
      ByteBuffer b = ByteBuffer.wrap(StandInLibrary.write(kernels, machine)).order(ByteOrder.LITTLE_ENDIAN);
      assertEquals(0x464c457f, b.getInt(0));
      assertEquals(3, b.getShort(16), "ET_DYN");
      assertEquals(machine, b.getShort(18));
      Map<Long, Long> dynamic = dynamic(b);
      assertEquals(24L, dynamic.get(11L), "DT_SYMENT");
      int symtab = (int) (long) dynamic.get(6L);
      int strtab = (int) (long) dynamic.get(5L);
      int hash = (int) (long) dynamic.get(4L);
      List<String> found = new ArrayList<>();
      for (int s = b.getInt(hash + 8); s != 0; s = b.getInt(hash + 8 + 4 * b.getInt(hash) + 4 * s)) {
        int name = b.getInt(symtab + 24 * s);
        int end = strtab + name;
        while (b.get(end) != 0) {
          end++;
        }
        found.add(new String(b.array(), strtab + name, end - strtab - name, StandardCharsets.UTF_8));
        assertEquals(0x12, b.get(symtab + 24 * s + 4), "a global function");
        assertTrue(b.getShort(symtab + 24 * s + 6) != 0, "defined");
      }
      assertEquals(kernels.stream().map(StandInLibrary::symbol).toList(), found);
    }
  }

  /** The loaders of the PT_LOAD segments and PT_GNU_STACK: the JVM's own dlopen takes it. */
  @Test
  void theJvmsDynamicLoaderLoadsIt(@TempDir Path dir) throws Exception {
    OptionalInt machine = StandInLibrary.machine();
    assumeTrue(machine.isPresent(), "no stand-in library for " + System.getProperty("os.arch"));
    Path library = dir.resolve("k.so");
    Files.write(library, StandInLibrary.write(List.of("k"), machine.getAsInt()));
    System.load(library.toString());
  }

  /**
   * PoCL takes the library for a built work-group function and builds none: the binary carries each kernel's
   * generic function as the library's bytes, not a function PoCL generated (a process of its own: PoCL's cache
   * directory is read once per process).
   */
  @Test
  void poclTakesTheStandInsForBuiltFunctions(@TempDir Path dir) throws Exception {
    assumeTrue(StandInLibrary.machine().isPresent(), "no stand-in library for " + System.getProperty("os.arch"));
    ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
        System.getProperty("java.class.path"), StandInLibraryTest.class.getName(), dir.toString())
        .redirectErrorStream(true);
    pb.environment().put("POCL_CACHE_DIR", dir.resolve("pocl").toString());
    pb.environment().put("POCL_KERNEL_CACHE", "1");
    pb.environment().remove("POCL_BINARY_SPECIALIZE_WG");
    Process p = pb.start();
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS));
    assertEquals(0, p.exitValue(), out);
    byte[] binary = Files.readAllBytes(dir.resolve("program.bin"));
    int generic = 0;
    for (PoclBinary.KernelRecord k : PoclBinary.parse(binary).kernels()) {
      for (PoclBinary.FileRecord f : k.files()) {
        if ("0-0-0".equals(f.specialization())) {
          byte[] want = StandInLibrary.write(List.of(k.name()), StandInLibrary.machine().getAsInt());
          byte[] tail = java.util.Arrays.copyOfRange(f.record(), f.record().length - want.length, f.record().length);
          assertArrayEquals(want, tail, k.name() + "'s generic function is not the stand-in");
          generic++;
        }
      }
    }
    assertEquals(2, generic, out);
  }

  /** The probe: builds two kernels, gives them stand-ins, and writes the binary PoCL packs, stand-ins and all. */
  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    OpenClBackend backend = OpenClDevices.open("Portable", null);
    try {
      cl_program program = backend.build("__kernel void first(__global float* y) { y[get_global_id(0)] = 1; }\n"
          + "__kernel void second(__global float* y) { y[get_global_id(0)] = 2; }\n", "");
      List<String> kernels = OpenClBackend.definedKernels(program);
      PoclCompileProcess.standIns(backend, dir.resolve("pocl"), kernels, Map.of("first", Set.of()), List.of());
      Files.write(dir.resolve("program.bin"), backend.programBinary(program));
      CL.clReleaseProgram(program);
    } finally {
      backend.close();
    }
  }

  private static Map<Long, Long> dynamic(ByteBuffer b) {
    int phoff = (int) b.getLong(32);
    for (int i = 0; i < b.getShort(56); i++) {
      int ph = phoff + i * 56;
      if (b.getInt(ph) == 2) {
        java.util.HashMap<Long, Long> out = new java.util.HashMap<>();
        for (int d = (int) b.getLong(ph + 8); b.getLong(d) != 0; d += 16) {
          out.put(b.getLong(d), b.getLong(d + 8));
        }
        return out;
      }
    }
    throw new AssertionError("no PT_DYNAMIC");
  }
}
