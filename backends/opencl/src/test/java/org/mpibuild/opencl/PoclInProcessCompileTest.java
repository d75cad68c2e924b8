package org.mpibuild.opencl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.KernelSource;

/**
 * A compile with launch shapes in the rank's own process: where it may run, how it finds its program in PoCL's cache
 * and names the binary's directory, and, in a JVM of Java 22 or later, the compile itself: the named functions only,
 * nothing of it left in PoCL's cache, a compile error as a compile process gives it, and PoCL 3.1's first value of
 * the variable caught by the check of the binary.
 */
class PoclInProcessCompileTest {
  static final String POCL_60 = "OpenCL 3.0 PoCL 6.0+debian  Linux, None+Asserts, RELOC, SPIR-V, LLVM 18.1.8";

  @Test
  void itRunsOnPoclWithTheVariableFreeTheCacheOnAndTheSettingNotOffBefore6OnlyOnce() {
    assertTrue(SpecializeVariable.keepsFirstValue("OpenCL 3.0 PoCL 3.1+debian  Linux"));
    assertTrue(SpecializeVariable.keepsFirstValue("OpenCL 3.0 PoCL 5.0"));
    assertTrue(!SpecializeVariable.keepsFirstValue(POCL_60));
    assertTrue(!SpecializeVariable.keepsFirstValue("OpenCL 3.0 PoCL 7.1+debian"));
    assertEquals(PoclInProcessCompile.unavailable(POCL_60, true, Map.of()),
        PoclInProcessCompile.unavailable("OpenCL 3.0 PoCL 3.1+debian  Linux", true, Map.of()));
    assertTrue(PoclInProcessCompile.unavailable("OpenCL 3.0 pocl", true, Map.of()).contains("names no PoCL release"));
    assertEquals("MPI_BUILD_OPENCL_COMPILE_IN_PROCESS=false", PoclInProcessCompile.unavailable(POCL_60, false, Map.of()));
    assertTrue(PoclInProcessCompile.unavailable(POCL_60, true, Map.of("POCL_BINARY_SPECIALIZE_WG", "4-1-1"))
        .contains("POCL_BINARY_SPECIALIZE_WG is set"));
    assertTrue(PoclInProcessCompile.unavailable(POCL_60, true, Map.of("POCL_KERNEL_CACHE", "0")).contains("cache is off"));
    // what remains is the JVM's: setenv (Java 22+, native access) or the environment slot
    assertEquals(NativeEnvironment.unavailable(), PoclInProcessCompile.unavailable(POCL_60, true, Map.of()));
  }

  @Test
  void theEnvironmentIsChangedBySetenvWhereTheJvmCanElseThroughTheSlotWhereTheProcessHasOne() {
    NativeEnvironment setenv = new NativeEnvironment() {
      @Override
      public void set(String name, String value) {}

      @Override
      public void reset(String name) {}
    };
    assertSame(setenv, NativeEnvironment.choose(setenv, () -> {
      throw new AssertionError("the slot is not tried where setenv is there");
    }));
    assertSame(NativeEnvironment.SLOT, NativeEnvironment.choose("Java 17 has no FFM API", () -> null));
    Object neither = NativeEnvironment.choose("Java 17 has no FFM API", () -> "no slot here");
    assertEquals("Java 17 has no FFM API; and no slot here", neither);
    // a slot is usable only where the process was started with one, whole
    assertTrue(EnvironmentSlot.problem(Map.of()).contains("no environment slot MPI_BUILD_ENVIRONMENT_SLOT"));
    String cut = EnvironmentSlot.problem(Map.of(EnvironmentSlot.NAME, EnvironmentSlot.filler().substring(1)));
    assertTrue(cut != null && cut.contains("no environment slot"), "a slot cut short is none: " + cut);
  }

  @Test
  void theBinarysDirectoryIsNamedByTheRequestAndTheCompilerInPoclsForm() {
    KernelSource request = ManyShapesTest.request();
    String hash = PoclInProcessCompile.buildHash("PoCL 6.0", request);
    assertTrue(hash.matches("[A-P]{2}/[A-P]{37}"), hash);
    assertEquals(hash, PoclInProcessCompile.buildHash("PoCL 6.0", ManyShapesTest.request()));
    assertNotEquals(hash, PoclInProcessCompile.buildHash("PoCL 7.1", request));
    assertNotEquals(hash, PoclInProcessCompile.buildHash("PoCL 6.0", request.withOptions("-cl-fast-relaxed-math")));
    assertNotEquals(hash, PoclInProcessCompile.buildHash("PoCL 6.0",
        KernelSource.of(request.source() + " ").withLaunchShapes(request.launchShapes())));
  }

  @Test
  void aBinarysBuildHashIsReadAndReplacedInPlace() {
    byte[] binary = PoclBinary.withBuildHash(PoclBinaryTest.binary(11, Map.of("k", Map.of("/k/0-0-0/k.so", "code"))),
        "FG/" + "E".repeat(37));
    String own = PoclBinary.buildHash(binary);
    assertEquals("FG/" + "E".repeat(37), own);
    String other = "AB/" + "C".repeat(37);
    byte[] renamed = PoclBinary.withBuildHash(binary, other);
    assertEquals(other, PoclBinary.buildHash(renamed));
    assertEquals(binary.length, renamed.length);
    assertArrayEquals(binary, PoclBinary.withBuildHash(renamed, own), "nothing else changed");
    assertEquals(0x1234_5678_9abcL, PoclBinary.deviceId(binary));
    assertThrows(IllegalArgumentException.class, () -> PoclBinary.withBuildHash(binary, "AB/CD"));
    assertThrows(IllegalArgumentException.class, () -> PoclBinary.withBuildHash(binary, "ab/" + "c".repeat(37)));
  }

  /**
   * Only a directory of PoCL's form ({@code XX/REST}, letters A to P) changed since the compile began whose program.bc
   * holds the nonce, and only one.
   */
  @Test
  void theProgramsDirectoryIsTheOneNewDirectoryWithTheNonce(@TempDir Path top) throws Exception {
    FileTime since = FileTime.fromMillis(System.currentTimeMillis() - 60_000);
    byte[] nonce = "mpi_build_compile_0123".getBytes(StandardCharsets.US_ASCII);
    Path ours = program(top, hash("AB", 'C'), "bitcode mpi_build_compile_0123 more");
    program(top, hash("AB", 'D'), "bitcode of another program");
    program(top, hash("PO", 'E'), "bitcode mpi_build_compile_9999");
    program(top, "AB/not-a-build-hash", "mpi_build_compile_0123");
    program(top, ".mpi-build-stand-ins-1/" + "F".repeat(37), "mpi_build_compile_0123");
    assertEquals(ours, PoclProgramDirectory.find(top, since, nonce, null), "only directories of PoCL's form");
    Path old = program(top, hash("OL", 'D'), "bitcode mpi_build_compile_0123");
    Files.setLastModifiedTime(old, FileTime.fromMillis(0));
    Files.setLastModifiedTime(old.getParent(), FileTime.fromMillis(0));
    assertEquals(ours, PoclProgramDirectory.find(top, since, nonce, null), "a directory older than the compile");
    program(top, hash("MM", 'A'), "mpi_build_compile_0123");
    assertNull(PoclProgramDirectory.find(top, since, nonce, null), "two: neither is provably ours");
    assertEquals(ours, PoclProgramDirectory.find(top, since, nonce, top.resolve(hash("MM", 'A'))),
        "the other named as not this compile's (the root's, in a cache the ranks share)");
    assertNull(PoclProgramDirectory.find(top, since, "mpi_build_compile_none".getBytes(
        StandardCharsets.US_ASCII), null));
    assertNull(PoclProgramDirectory.find(top.resolve("gone"), since, nonce, null), "a cache top deleted meanwhile");
  }

  /** A build hash as PoCL names its directories: {@code first}, then 37 times {@code fill}. */
  private static String hash(String first, char fill) {
    return first + "/" + String.valueOf(fill).repeat(37);
  }

  private static Path program(Path top, String hash, String bitcode) throws Exception {
    Path dir = Files.createDirectories(top.resolve(hash));
    Files.writeString(dir.resolve("program.bc"), bitcode);
    return dir;
  }

  /** The compile itself, in a JVM of the FFM binding's JDK (ffm.jdk) with native access and a cache of its own. */
  @Test
  void inAJvmThatCanSetTheVariableTheCompileLeavesTheNamedFunctionsOnlyAndNothingInTheCache(@TempDir Path cache)
      throws Exception {
    ProcessBuilder pb = child(java22(), cache);
    pb.environment().remove(EnvironmentSlot.NAME);
    compilesHere(pb, "setenv");
  }

  /**
   * The same compile in a JVM of this test's Java without the option for native access, started with an environment
   * slot as bin/mpi-build-rank starts a rank: on Java 17 (surefire's default run) the variable is written into the
   * slot; on Java 22 and later (where Maven runs on one), which allow native access without the option, by setenv,
   * the way preferred where both are.
   */
  @Test
  void inAJvmStartedWithTheSlotTheSameCompileRunsThroughTheSlot(@TempDir Path cache) throws Exception {
    ProcessBuilder pb = child(Path.of(System.getProperty("java.home"), "bin", "java"), cache);
    pb.command().remove("--enable-native-access=ALL-UNNAMED");
    pb.environment().put(EnvironmentSlot.NAME, EnvironmentSlot.filler());
    compilesHere(pb, Runtime.version().feature() < 22 ? "slot" : "setenv");
  }

  /**
   * A job of one rank (local mode) that can compile here, started as bin/mpi-build-rank starts a rank, where its
   * binary cannot come from the launched program (POCL_WORK_GROUP_SPECIALIZATION set): its kernel comes with the
   * finished binary, made in this process before it (as a rank compiling for itself pays at its first launches), not
   * after it by a compile process; the cache keeps it for the next job.
   */
  @Test
  void aloneTheFinishedBinaryIsMadeHereWithTheKernel(@TempDir Path cache, @TempDir Path entries) throws Exception {
    ProcessBuilder pb = child(Path.of(System.getProperty("java.home"), "bin", "java"), cache, "alone", entries.toString());
    pb.command().remove("--enable-native-access=ALL-UNNAMED");
    pb.environment().put(EnvironmentSlot.NAME, EnvironmentSlot.filler());
    pb.environment().put("POCL_WORK_GROUP_SPECIALIZATION", "1");
    String out = output(pb);
    assertTrue(out.contains("alone binary with the kernel true\n"), out);
    assertTrue(out.contains("alone no compile process true\n"), out);
    assertTrue(out.contains("compiled in this process"), out);
    assertTrue(out.contains("alone functions " + NAMED + "\n"), out);
    assertTrue(out.contains("alone ran right\n"), out);
    assertTrue(out.contains("alone next job hit true\n"), out);
  }

  /**
   * A job of one rank in a JVM that cannot set PoCL's variable (Java 17 without a slot, as a plain {@code java}
   * starts one): no compile process; the binary comes from the program once its kernels launched at their shapes,
   * with the named functions only, at binaryData() or at the kernel's close; a request whose shapes never launched is
   * compiled after its close; the next jobs find all three.
   */
  @Test
  void aloneWithoutTheVariableTheBinaryComesFromTheLaunchedProgram(@TempDir Path cache, @TempDir Path entries)
      throws Exception {
    ProcessBuilder pb = child(Path.of(System.getProperty("java.home"), "bin", "java"), cache, "launched",
        entries.toString());
    pb.command().remove("--enable-native-access=ALL-UNNAMED");
    pb.environment().remove(EnvironmentSlot.NAME);
    String out = output(pb);
    assertTrue(out.contains("launched binary with the kernel false\n"), out);
    assertTrue(out.contains("launched no compile process true\n"), out);
    assertEquals(2, out.split("binary from the launched program: 4 named functions in", -1).length - 1,
        "made from the program at binaryData() and at a close: " + out);
    assertTrue(out.contains("launched functions " + NAMED + "\n"), out);
    assertTrue(out.contains("launched ran right\n"), out);
    assertTrue(out.contains("(not launched at that shape)); a compile makes it"), out);
    assertEquals(3, out.split("launched next job hit true " + java.util.regex.Pattern.quote(NAMED) + "\n", -1).length
        - 1, out);
    // the fallback compile of the request never launched runs in the process where the JVM can (Java 22+), and
    // before that no compile did: the launched program's binary needs none
    assertEquals(Runtime.version().feature() >= 22 ? 1 : 0, out.split("compiled in this process", -1).length - 1, out);
  }

  /** Every named function of {@link ManyShapesTest#request()}, as ManyShapesTest.functions prints them. */
  private static final String NAMED = "[k0/1-1-1-goffs0-smallgrid, k1/2-1-1-goffs0-smallgrid, "
      + "k2/4-1-1-goffs0-smallgrid, k3/8-1-1-goffs0-smallgrid]";

  /** What the child JVM of {@code pb} printed, once it exited 0. */
  private static String output(ProcessBuilder pb) throws Exception {
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, p.waitFor(), out);
    return out;
  }

  private static void compilesHere(ProcessBuilder pb, String way) throws Exception {
    String out = output(pb);
    assertTrue(out.contains("unavailable null\n"), out);
    assertTrue(out.contains("way " + way + "\n"), out);
    assertTrue(out.contains("functions " + NAMED + "\n"), out);
    assertTrue(out.contains("hash true\n"), out);
    assertTrue(out.contains("loaded true\n"), out);
    assertTrue(out.contains("unnamed shapes ran right\n"), out);
    assertTrue(out.contains("error true\n"), "a compile error with its build log: " + out);
    assertTrue(out.contains("broken shared parts 0\n"), "a source that does not compile is not shared: " + out);
    assertEquals(4, out.split("left 0\n", -1).length - 1, "no program of a nonce left, each time: " + out);
    // PoCL 3.1 to 5.0 keep the variable's first value: the second request, with a shape outside it, goes to a
    // compile process; 6.0 and later build it here. The third, with a shape among the first's, is built here by both.
    boolean firstValueKept = backendVersionBefore6();
    assertTrue(out.contains(firstValueKept ? "closed PoCL before 6.0 keeps the value of POCL_BINARY_SPECIALIZE_WG that "
        + "the first compile here set\n" : "closed null\n"), out);
    assertTrue(out.contains(firstValueKept ? "second none\n" : "second [k1/16-1-1-goffs0-smallgrid]\n"), out);
    if (firstValueKept) {
      assertTrue(out.contains("which does not name [16-1-1-goffs0-smallgrid]"), out);
    }
    // nor is the front end of a shared compile of such shapes built here, for a part that would not compile here
    assertTrue(out.contains("outside parts 2 front end shared " + !firstValueKept + "\n"), out);
    assertTrue(out.contains("third [k2/1-1-1-goffs0-smallgrid]\nthird ran right\n"), out);
  }

  /**
   * A compile shared between 2 ranks (2 JVMs, one PoCL cache): the root compiles the front end once and sends its
   * object's bitcode with the other part, whose rank generates its functions from it, no front end of its own, while
   * the root's program is still in the cache they share; the joined binary holds every named function and runs right.
   * On every PoCL: on 3.1 a program built from a built program's {@code program.bc} crashed at the binary query.
   */
  @Test
  void theOtherPartIsBuiltFromTheRootsFrontEnd(@TempDir Path cache, @TempDir Path exchange) throws Exception {
    Path java = java22();
    Process root = child(java, cache, "root", exchange.toString()).start();
    for (int i = 0; i < 1200 && !Files.exists(exchange.resolve("parts")) && root.isAlive(); i++) {
      Thread.sleep(50);
    }
    Process part = child(java, cache, "part", exchange.toString()).start();
    String partOut = new String(part.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, part.waitFor(), partOut);
    String rootOut = new String(root.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, root.waitFor(), rootOut);
    assertTrue(rootOut.contains("front end shared true\n"), rootOut);
    assertTrue(partOut.contains("compiled in this process from the root's front end"), partOut);
    assertTrue(partOut.contains("part 1 [k1/2-1-1-goffs0-smallgrid, k3/8-1-1-goffs0-smallgrid]\n"), partOut);
    assertTrue(rootOut.contains("joined " + NAMED + "\n"), rootOut);
    assertTrue(rootOut.contains("root ran right\nroot ran unnamed shapes right\n"), rootOut);
  }

  /**
   * A rank's first compile is one part of a shared compile; its next, of another request with the same shapes, the
   * other part: both compile in the process, on PoCL before 6.0 too, where PoCL keeps the first value it read (the
   * whole request's shapes, not only the first part's).
   */
  @Test
  void aLaterPartWithTheSameShapesCompilesHereWhateverThePartBefore(@TempDir Path cache) throws Exception {
    ProcessBuilder pb = child(Path.of(System.getProperty("java.home"), "bin", "java"), cache, "parts");
    pb.command().remove("--enable-native-access=ALL-UNNAMED");
    pb.environment().put(EnvironmentSlot.NAME, EnvironmentSlot.filler());
    String out = output(pb);
    assertTrue(out.contains("parts first [k1/2-1-1-goffs0-smallgrid, k3/8-1-1-goffs0-smallgrid]\n"), out);
    assertTrue(out.contains("parts second [k0/1-1-1-goffs0-smallgrid, k2/4-1-1-goffs0-smallgrid]\n"), out);
  }

  @Test
  void aPartCarriesTheFrontEndOnALineThePairsSkip() {
    String line = PoclInProcessCompile.FrontEnd.line("AB/" + "C".repeat(37), "0123456789abcdef0123456789abcdef",
        new byte[] {1, 2, 3, (byte) 0xff});
    String part = "k1\t2-1-1-goffs0-smallgrid\n" + line;
    PoclInProcessCompile.FrontEnd f = PoclInProcessCompile.FrontEnd.of(part);
    assertEquals("AB/" + "C".repeat(37), f.rootDirectory());
    assertEquals("0123456789abcdef0123456789abcdef", f.nonce());
    assertArrayEquals(new byte[] {1, 2, 3, (byte) 0xff}, f.bitcode());
    assertEquals(Map.of("k1", java.util.Set.of("2-1-1-goffs0-smallgrid")), PoclSpecialization.pairs(part));
    assertNull(PoclInProcessCompile.FrontEnd.of("k1\t2-1-1-goffs0-smallgrid\n"));
    assertNull(PoclInProcessCompile.FrontEnd.of(line.replace("AB/", "../")), "a directory not of PoCL's form");
    assertNull(PoclInProcessCompile.FrontEnd.of(line.replace("0123456789abcdef0", "0123456789abcdef/")));
  }

  /** The FFM binding's JDK (ffm.jdk), or the test is skipped, saying why. */
  private static Path java22() {
    String jdk = System.getProperty("ffm.jdk");
    Path java = jdk == null ? null : Path.of(jdk, "bin", "java");
    if (java == null || !Files.isExecutable(java)) {
      String why = "no JDK 22+ named by ffm.jdk (" + jdk + "): the compile in a rank's own process needs one";
      System.out.println("SKIP " + why);
      Assumptions.abort(why);
    }
    return java;
  }

  /** A JVM of {@code java} with native access running {@link InProcessCompileMain} with {@code args}, PoCL's cache in {@code cache}. */
  private static ProcessBuilder child(Path java, Path cache, String... args) {
    List<String> cmd = new java.util.ArrayList<>(List.of(java.toString(), "--enable-native-access=ALL-UNNAMED",
        "-Dmpibuild.test.log=DEBUG", "-cp", System.getProperty("java.class.path"),
        InProcessCompileMain.class.getName()));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().put("POCL_CACHE_DIR", cache.toString());
    pb.environment().remove("POCL_BINARY_SPECIALIZE_WG");
    pb.environment().remove("POCL_KERNEL_CACHE"); // the tests' "0": this compile needs PoCL's cache on
    return pb;
  }

  private static boolean backendVersionBefore6() {
    OpenClBackend backend = OpenClDevices.open("Portable", null);
    try {
      return SpecializeVariable.keepsFirstValue(backend.compilerIdentity());
    } finally {
      backend.close();
    }
  }
}
