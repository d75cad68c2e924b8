package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The FFM binding (no mpi.jar) under Open MPI's mpirun and under MPICH's mpiexec (by explicit path, both
 * installed side by side), on JDK 25: the collective protocol's scenarios, checked on every rank.
 */
class FfmIT {
  /** The JDK 22+ the build found (scripts/provision: MPI_BUILD_FFM_JDK, else the newest under /usr/lib/jvm). */
  static final String FFM_JDK = System.getProperty("mpibuild.it.ffmjdk", "");
  static final Path JDK = Path.of(FFM_JDK.isBlank() || FFM_JDK.startsWith("${") ? "/nonexistent-jdk" : FFM_JDK);
  static final Path MPIEXEC_MPICH = Path.of("/usr/bin/mpiexec.mpich");
  static Map<String, String> env() {
    Map<String, String> env = new HashMap<>();
    env.put("MPI_BUILD_JAVA", JDK.resolve("bin/java").toString());
    env.put("MPI_BUILD_BINDING", "ffm");
    env.put("JAVA_TOOL_OPTIONS", "--enable-native-access=ALL-UNNAMED");
    env.put("MPI_BUILD_BACKEND", "opencl");
    return env;
  }

  static List<String> openMpi(int ranks) {
    Mpirun.Job job = Mpirun.run(ranks, 300, env(), "org.mpibuild.programs.Portable");
    try {
      assertEquals(0, job.exitCode(), job.describe());
      List<String> lines = new ArrayList<>();
      job.stdoutByRank().values().forEach(lines::addAll);
      return lines;
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  static List<String> mpich(int ranks) throws Exception {
    return mpich(ranks, "org.mpibuild.programs.Portable");
  }

  /**
   * Runs {@code mainClass} with {@code args} under MPICH's mpiexec on the FFM binding; every rank's lines, each
   * prefixed with {@code [rank]} ({@code -prepend-rank}). Fails unless the job exits 0 within 300 s.
   */
  static List<String> mpich(int ranks, String mainClass, String... args) throws Exception {
    Path dir = Files.createTempDirectory("mpi-build-mpich");
    try {
      List<String> cmd = new ArrayList<>(List.of(MPIEXEC_MPICH.toString(), "-n", Integer.toString(ranks),
          "-prepend-rank", Mpirun.REPO.resolve("bin/mpi-build-rank").toString(), "-cp",
          System.getProperty("mpibuild.it.classpath"), mainClass));
      cmd.addAll(List.of(args));
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve("out").toFile());
      pb.environment().putAll(env());
      pb.environment().put("MPI_BUILD_POCL_CACHE_ROOT", dir.resolve("pocl").toString());
      pb.environment().put("MPI_BUILD_JAVA_OPTS", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xmx256m");
      Process p = pb.start();
      if (!p.waitFor(300, TimeUnit.SECONDS)) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
        throw new AssertionError("mpiexec.mpich did not finish:\n" + Files.readString(dir.resolve("out")));
      }
      String out = Files.readString(dir.resolve("out"), StandardCharsets.UTF_8);
      assertEquals(0, p.exitValue(), out);
      return out.lines().toList();
    } finally {
      Mpirun.delete(dir);
    }
  }

  @ParameterizedTest(name = "{0}, {1} ranks")
  @CsvSource({"openmpi, 1", "openmpi, 2", "openmpi, 4", "mpich, 1", "mpich, 2", "mpich, 4"})
  void theProtocolRunsOnTheFfmBinding(String mpi, int ranks) throws Exception {
    assumeJdk();
    if (mpi.equals("mpich") && !Files.isExecutable(MPIEXEC_MPICH)) {
      skip("MPICH is not installed (" + MPIEXEC_MPICH + "; scripts/provision installs it)");
    }
    List<String> lines = mpi.equals("openmpi") ? openMpi(ranks) : mpich(ranks);
    // This machine's MPIs (Open MPI 4.1, MPICH 4.0) predate the standard ABI: the implementations' tables.
    PortableResults.check(lines, ranks, mpi.equals("openmpi") ? "FFM_(OPEN_MPI)" : "FFM_(MPICH)");
  }

  /** Skips the test, saying why, unless the JDK 22+ of the FFM binding is there. */
  static void assumeJdk() {
    if (!Files.isExecutable(JDK.resolve("bin/java"))) {
      skip(FFM_JDK.isBlank() || FFM_JDK.startsWith("${") ? "no JDK 22+ was found, so the FFM binding was not built "
          + "(set MPI_BUILD_FFM_JDK and rerun scripts/provision)" : "no JDK 22+ at " + JDK);
    }
  }

  static void skip(String why) {
    System.out.println("FfmIT: skipped: " + why);
    Assumptions.abort(why);
  }
}
