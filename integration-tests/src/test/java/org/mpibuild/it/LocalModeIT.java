package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The same call in a program started with plain `java`: a local build, with or without mpi.jar. */
class LocalModeIT {
  static final String EXPECTED = "local: ranks=1 compiled=true verified=true communicator=local (no MPI), 1 rank";

  static List<String> java(String classpath) throws IOException, InterruptedException {
    java.nio.file.Path cache = java.nio.file.Files.createTempDirectory("mpi-build-local-cache");
    ProcessBuilder pb = new ProcessBuilder("java", "-cp", classpath, "org.mpibuild.programs.LocalBuild")
        .redirectErrorStream(true);
    pb.environment().put("MPI_BUILD_CACHE_DIR", cache.toString());
    Process p;
    try {
      p = pb.start();
    } finally {
      cache.toFile().deleteOnExit();
    }
    p.getOutputStream().close();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("plain java run did not finish in 120 s");
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    List<String> lines = new ArrayList<>(out.lines().toList());
    lines.add("exit=" + p.exitValue());
    Mpirun.delete(cache);
    return lines;
  }

  @Test
  void withoutMpiJarTheBuildIsLocal() throws Exception {
    String cp = System.getProperty("mpibuild.it.classpath");
    assertTrue(!cp.contains("mpi.jar"), cp);
    List<String> out = java(cp);
    assertTrue(out.contains(EXPECTED), String.join("\n", out));
    assertEquals("exit=0", out.get(out.size() - 1), String.join("\n", out));
  }

  @Test
  void withMpiJarButNoLauncherTheBuildIsLocal() throws Exception {
    String jar = System.getProperty("mpibuild.it.mpijar");
    assertTrue(new java.io.File(jar).isFile(), "provisioning installs " + jar);
    List<String> out = java(System.getProperty("mpibuild.it.classpath") + ":" + jar);
    assertTrue(out.contains(EXPECTED), String.join("\n", out));
    assertEquals("exit=0", out.get(out.size() - 1), String.join("\n", out));
  }
}
