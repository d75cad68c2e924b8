package org.mpibuild.opencl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.mpibuild.CompileException;
import org.mpibuild.KernelSource;

/**
 * A compile process started ahead serves the next compile of a backend that wanted one, and whatever it cannot do a
 * new process does: the same binary either way, or the same compile error.
 */
class SpareCompileProcessTest {
  static OpenClBackend backend;

  /** A backend that wants one, and its first compile, after which the first is started. */
  @BeforeAll
  static void open() throws Exception {
    backend = OpenClDevices.open("Portable", null);
    backend.prepareCompiles();
    assertTrue(ProcessHandle.current().children().noneMatch(SpareCompileProcessTest::startedAhead),
        "none before the first compile");
    PoclSpecialization.compile(ManyShapesTest.request(), backend.platformIndex, backend.deviceIndex, true);
    waiting();
  }

  @AfterAll
  static void close() {
    backend.close();
  }

  @Test
  void theProcessStartedAheadCompilesAndIsGoneWithItsDirectoryAndAnotherWaits() throws Exception {
    ProcessHandle spare = waiting();
    Path home = home(spare);
    assertTrue(Files.isDirectory(home), home.toString());
    KernelSource request = ManyShapesTest.request();
    PoclSpecialization.Result r = PoclSpecialization.compile(request, backend.platformIndex, backend.deviceIndex,
        true);
    assertEquals(named(), ManyShapesTest.functions(r.binary()));
    assertTrue(spare.onExit().get(30, TimeUnit.SECONDS) != null && !spare.isAlive(), "it served the compile");
    assertFalse(Files.exists(home), "its directory is deleted: " + home);
    ManyShapesTest.runsRight(backend, request, r.binary());
    assertNotEquals(spare.pid(), waiting().pid(), "the next one waits");
  }

  @Test
  void aProcessStartedAheadThatDiedLeavesTheCompileToANewOne() throws Exception {
    ProcessHandle spare = waiting();
    spare.destroyForcibly();
    spare.onExit().get(30, TimeUnit.SECONDS);
    PoclSpecialization.Result r = PoclSpecialization.compile(ManyShapesTest.request(), backend.platformIndex,
        backend.deviceIndex, true);
    assertEquals(named(), ManyShapesTest.functions(r.binary()));
  }

  @Test
  void aCompileErrorFromTheProcessStartedAheadIsTheCompilersWithItsLog() throws Exception {
    ProcessHandle spare = waiting();
    KernelSource broken = KernelSource.of("__kernel void k0(__global float* y) { y[0] = undefined_name; }")
        .withLaunchShapes(List.of(org.mpibuild.LaunchShape.of("k0", 4)));
    CompileException e = assertThrows(CompileException.class, () -> PoclSpecialization.compile(broken,
        backend.platformIndex, backend.deviceIndex, true));
    assertTrue(e.buildLog().contains("undefined_name"), e.buildLog());
    assertTrue(spare.onExit().get(30, TimeUnit.SECONDS) != null, "the error came from the process started ahead");
  }

  @Test
  void aBackendThatDidNotWantOneLeavesItWaiting() throws Exception {
    ProcessHandle spare = waiting();
    PoclSpecialization.compile(ManyShapesTest.request(), backend.platformIndex, backend.deviceIndex, false);
    assertTrue(spare.isAlive(), "not taken by a compile that did not ask for it");
  }

  /** The request's named functions, as ManyShapesTest lists them. */
  private static TreeSet<String> named() {
    TreeSet<String> expected = new TreeSet<>();
    for (int i = 0; i < ManyShapesTest.LOCAL.length; i++) {
      expected.add("k" + i + "/" + ManyShapesTest.LOCAL[i] + "-1-1-goffs0-smallgrid");
    }
    return expected;
  }

  /** The compile process waiting for a request: this JVM's child with {@code --wait} in its command line. */
  private static ProcessHandle waiting() throws InterruptedException {
    for (int i = 0; i < 100; i++) {
      List<ProcessHandle> found = ProcessHandle.current().children().filter(SpareCompileProcessTest::startedAhead)
          .toList();
      if (found.size() == 1) {
        return found.get(0);
      }
      Thread.sleep(50);
    }
    throw new AssertionError("no single compile process started ahead is waiting");
  }

  private static boolean startedAhead(ProcessHandle p) {
    return p.info().commandLine().orElse("").contains(" " + PoclCompileProcess.WAIT + " ");
  }

  /** Its directory, the argument after {@code --wait}. */
  private static Path home(ProcessHandle spare) {
    String[] args = spare.info().commandLine().orElseThrow().split(" ");
    for (int i = 0; i < args.length - 1; i++) {
      if (args[i].equals(PoclCompileProcess.WAIT)) {
        return Path.of(args[i + 1]);
      }
    }
    throw new AssertionError("no " + PoclCompileProcess.WAIT + " in " + spare.info().commandLine());
  }
}
