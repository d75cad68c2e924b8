package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The GPU bundle carries an MPI of its own: {@code scripts/gpu-bundle} (what {@code make gpu-bundle} runs) puts
 * Debian's MPICH, with the libraries it loads, beside the jlink runtime; here its layout is checked, then, in a
 * bare Debian 12 container with no MPI and no Java ({@code scripts/gpu-bundle-container}), the bundle's own
 * mpiexec runs the OpenCL demo at 2 ranks on the FFM binding and both ranks verify. Skips, saying why, without
 * a JDK 22+ (no FFM binding to bundle) or without a container engine.
 */
class GpuBundleIT {
  static final Path BUNDLE = Mpirun.REPO.resolve("integration-tests/target/gpu-bundle");
  /** glibc's libraries, which the bundle must leave to the machine it runs on. */
  static final List<String> GLIBC = List.of("libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
      "libresolv.so.2", "ld-linux-x86-64.so.2");

  private static String bundleProblem;

  @BeforeAll
  static void assemble() throws Exception {
    if (!Files.isExecutable(FfmIT.JDK.resolve("bin/jlink"))) {
      bundleProblem = "no JDK 22+ found by the build (set MPI_BUILD_FFM_JDK and rerun scripts/provision): the FFM "
          + "binding the bundle's ranks use was not built";
      return;
    }
    Commands.Run r = Commands.run(Mpirun.REPO, Map.of("MPI_BUILD_FFM_JDK", FfmIT.JDK.toString()), 300,
        List.of(Mpirun.REPO.resolve("scripts/gpu-bundle").toString(), BUNDLE.toString()));
    System.out.println("GpuBundleIT: scripts/gpu-bundle:\n" + r.out());
    assertEquals(0, r.exit(), r.out());
  }

  static void skipWithoutBundle() {
    if (bundleProblem != null) {
      System.out.println("GpuBundleIT: skipped: " + bundleProblem);
      Assumptions.abort(bundleProblem);
    }
  }

  @Test
  void theBundleHoldsARuntimeForTheFfmBindingAndAnMpiThatLoadsOnlyItsOwnLibraries() throws Exception {
    skipWithoutBundle();
    Commands.Run version = Commands.run(BUNDLE, Map.of(), 60, List.of(BUNDLE.resolve("jre/bin/java").toString(),
        "--list-modules"));
    assertEquals(0, version.exit(), version.out());
    assertTrue(version.out().lines().anyMatch(l -> l.matches("java\\.base@(2[2-9]|[3-9][0-9]).*")),
        "the runtime is a Java 22+, which the FFM binding needs:\n" + version.out());
    try (Stream<Path> jars = Files.list(BUNDLE.resolve("lib"))) {
      assertTrue(jars.anyMatch(p -> p.getFileName().toString().startsWith("mpi-build-ffm-")), "the FFM binding's jar");
    }
    for (String f : List.of("mpi/bin/mpiexec", "mpi/bin/mpiexec.hydra", "mpi/bin/hydra_pmi_proxy",
        "bin/mpi-build-rank", "gpu-check")) {
      assertTrue(Files.isExecutable(BUNDLE.resolve(f)), f);
    }
    Path lib = BUNDLE.resolve("mpi/lib");
    assertTrue(Files.isRegularFile(lib.resolve("libmpich.so.12")), "MPICH's library");
    for (String g : GLIBC) {
      assertFalse(Files.exists(lib.resolve(g)), "glibc's " + g + " stays the machine's own");
    }
    // With the bundle's library path, every library that MPICH's files load comes from the bundle or glibc.
    List<Path> files;
    try (Stream<Path> s = Stream.concat(Files.list(lib), Files.list(lib.resolve("ucx")))) {
      files = Stream.concat(s.filter(Files::isRegularFile).toList().stream(),
          Stream.of("mpiexec.hydra", "hydra_pmi_proxy", "mpichversion").map(b -> BUNDLE.resolve("mpi/bin/" + b)))
          .toList();
    }
    for (Path f : files) {
      Commands.Run ldd = Commands.run(BUNDLE, Map.of("LD_LIBRARY_PATH", lib.toString()), 60,
          List.of("ldd", f.toString()));
      assertEquals(0, ldd.exit(), f + ": " + ldd.out());
      for (String line : ldd.out().lines().map(String::strip).filter(l -> l.contains(" => ")).toList()) {
        String name = line.substring(0, line.indexOf(' '));
        String path = line.substring(line.indexOf(" => ") + 4).replaceAll(" \\(0x[0-9a-f]+\\)$", "");
        assertTrue(path.startsWith(lib.toString()) || GLIBC.contains(name), f.getFileName() + " loads " + name
            + " from " + path + ", outside the bundle");
      }
    }
    String packages = Files.readString(BUNDLE.resolve("mpi/PACKAGES"));
    assertTrue(packages.contains("libmpich.so.12 libmpich12 ") && packages.contains("mpiexec.hydra mpich "), packages);
  }

  @Test
  void theBundlesOwnMpiRunsTheOpenClDemoAtTwoRanksWhereNoMpiAndNoJavaAreInstalled() throws Exception {
    skipWithoutBundle();
    Commands.Run r = Commands.run(Mpirun.REPO, Map.of(), 1200,
        List.of(Mpirun.REPO.resolve("scripts/gpu-bundle-container").toString(), BUNDLE.toString()));
    System.out.println("GpuBundleIT: scripts/gpu-bundle-container:\n" + r.out());
    if (r.exit() == 3 || r.exit() == 4) {
      String why = r.out().lines().filter(l -> l.startsWith("gpu-bundle-container: ")).reduce((a, b) -> b)
          .orElse(r.out());
      System.out.println("GpuBundleIT: the bare container skipped: " + why);
      Assumptions.abort(why);
    }
    assertEquals(0, r.exit(), r.out());
    List<String> lines = r.out().lines().toList();
    assertTrue(lines.contains("BARE no-mpi yes"), "the container has no MPI of its own:\n" + r.out());
    assertTrue(lines.contains("BARE no-java yes"), "the container has no Java of its own:\n" + r.out());
    assertTrue(lines.contains("BARE launch rc=0"), "the job exits 0:\n" + r.out());
    assertEquals(2, lines.stream().filter(l -> l.matches("rank [01]: .*verified yes")).count(),
        "both ranks verified:\n" + r.out());
    assertTrue(lines.stream().anyMatch(l -> l.startsWith("summary: ranks=2 compiles=1 ")
        && l.contains("binding=FFM (MPICH)")), "one compile, on the FFM binding over the bundle's MPICH:\n" + r.out());
  }
}
