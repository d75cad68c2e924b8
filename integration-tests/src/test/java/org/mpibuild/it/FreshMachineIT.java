package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The README's two commands on the README's machine: {@code scripts/fresh-machine} runs {@code make demo} from a
 * clean copy of the sources in a bare Debian 12 whose only JDK is Debian's 17 (so nothing of Java 22 may be
 * needed), and in a bare Debian 13 with its own JDK 25 (so the FFM binding and the on-queue commands are built
 * by a distribution's JDK, not this machine's Temurin); then the OpenCL backend's tests and {@code doctor}. Skips,
 * saying why, without a container engine.
 */
class FreshMachineIT {
  @ParameterizedTest(name = "{0}")
  @CsvSource({"bookworm, 17., no", "trixie, 25., yes"})
  void makeDemoBuildsEveryModuleThisMachineCanAndRunsTheDemo(String suite, String java, String java22Built)
      throws Exception {
    Commands.Run r = Commands.run(Mpirun.REPO, Map.of(), 2400,
        List.of(Mpirun.REPO.resolve("scripts/fresh-machine").toString(), suite));
    System.out.println("FreshMachineIT: " + suite + ":\n" + r.out());
    if (r.exit() == 3 || r.exit() == 4) {
      String why = r.out().lines().filter(l -> l.startsWith("fresh-machine: ")).reduce((a, b) -> b).orElse(r.out());
      System.out.println("FreshMachineIT: " + suite + " skipped: " + why);
      Assumptions.abort(why);
    }
    assertEquals(0, r.exit(), r.out());
    // Maven's quiet mode leaves colour resets at the start of the next line: take them off first.
    List<String> fresh = r.out().lines().map(l -> l.replaceAll("\u001B\\[[0-9;]*m", ""))
        .filter(l -> l.startsWith("FRESH ")).map(l -> l.substring(6)).toList();
    assertTrue(fresh.contains("ok"), r.out());
    assertTrue(r.out().contains("summary: ranks=2 compiles=1 loaded=2 verified=2"), "the demo ran:\n" + r.out());
    assertTrue(fresh.stream().anyMatch(l -> l.startsWith("java " + java)), "the suite's own JDK:\n" + r.out());
    if (suite.equals("bookworm")) {
      assertTrue(fresh.stream().filter(l -> l.startsWith("jdks ")).allMatch(l -> !l.matches(".*(2[2-9]|temurin).*")),
          "Debian 12's JDK 17 is the only one:\n" + r.out());
      assertTrue(r.out().contains("provision: no JDK 22+ found"), "provision says what is left out:\n" + r.out());
    }
    for (String module : List.of("mpi-build", "streams", "backends/opencl", "backends/cuda", "bindings/mpijava",
        "cli", "examples", "programs", "testkit", "benchmarks", "integration-tests")) {
      assertTrue(fresh.stream().anyMatch(l -> l.startsWith("module " + module + " ")), module + " built:\n" + r.out());
    }
    boolean ffm = fresh.stream().anyMatch(l -> l.startsWith("module bindings/ffm "));
    assertEquals(java22Built.equals("yes"), ffm, "the FFM binding built only with a JDK 22+:\n" + r.out());
    assertTrue(fresh.contains("queue-commands " + java22Built), "the on-queue commands:\n" + r.out());
    assertTrue(fresh.contains("tests backends/opencl passed"), r.out());
    assertTrue(fresh.contains("doctor-warnings 0"), "doctor prints no JVM warnings of its own:\n" + r.out());
    assertTrue(r.out().contains("doctor: everything needed is here"), r.out());
  }
}
