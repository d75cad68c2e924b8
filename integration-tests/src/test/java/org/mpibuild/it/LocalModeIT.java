package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The same call in a program started with plain `java`: a local build, with or without mpi.jar. */
class LocalModeIT {
  static final String EXPECTED = "local: ranks=1 compiled=true verified=true communicator=local (no MPI), 1 rank";

  static List<String> java(String classpath, String... jvmOptions) throws IOException, InterruptedException {
    java.nio.file.Path cache = java.nio.file.Files.createTempDirectory("mpi-build-local-cache");
    List<String> cmd = new ArrayList<>(List.of("java"));
    cmd.addAll(List.of(jvmOptions));
    cmd.addAll(List.of("-cp", classpath, "org.mpibuild.programs.LocalBuild"));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().remove("XDG_RUNTIME_DIR");
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

  /**
   * On a shared node, the first user's JOCL library sits in /tmp under JOCL's fixed name (mode 600, or
   * anything else planted there); a second user's backend must still start: it loads from its own private
   * directory, never from the shared name.
   */
  @Test
  void aFileOfAnotherUserAtJoclsFixedTempNameDoesNotStopTheBackend() throws Exception {
    java.nio.file.Path tmp = java.nio.file.Files.createTempDirectory("mpi-build-shared-tmp");
    try {
      java.nio.file.Path planted = tmp.resolve(System.mapLibraryName("JOCL_2_0_5-linux-x86_64"));
      java.nio.file.Files.createDirectories(planted.resolve("not-a-library")); // unusable, and not ours to remove
      List<String> out = java(System.getProperty("mpibuild.it.classpath"), "-Djava.io.tmpdir=" + tmp);
      assertTrue(out.contains(EXPECTED), String.join("\n", out));
      assertTrue(java.nio.file.Files.isDirectory(planted.resolve("not-a-library")), "the planted file is left alone");
      java.nio.file.Path own = tmp.resolve("mpi-build-" + System.getProperty("user.name"));
      assertTrue(java.nio.file.Files.isRegularFile(own.resolve(planted.getFileName())), "loaded from " + own);
      assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(
          java.nio.file.Files.getPosixFilePermissions(own)));
    } finally {
      Mpirun.delete(tmp);
    }
  }

  /**
   * A uid with no passwd entry ({@code docker run --user 54321}, Kubernetes' runAsUser, Apptainer): the JDK
   * says {@code user.name=?} and {@code user.home=?}. The OpenCL backend starts from its own 0700 directory,
   * and the build is cached under $HOME and loaded by the next run. Needs root (setpriv); skipped otherwise.
   */
  @Test
  void aUidWithoutAPasswdEntryStartsTheBackendAndCaches() throws Exception {
    int uid = 54321;
    if (!"root".equals(System.getProperty("user.name")) || !java.nio.file.Files.isExecutable(Path.of("/usr/bin/setpriv"))) {
      System.out.println("LocalModeIT: skipped, needs root and setpriv to run as a uid without a passwd entry");
      return;
    }
    Path home = java.nio.file.Files.createTempDirectory("mpi-build-uid-home");
    Path tmp = java.nio.file.Files.createTempDirectory("mpi-build-uid-tmp");
    try {
      for (Path d : List.of(home, tmp)) {
        java.nio.file.Files.setAttribute(d, "unix:uid", uid);
        java.nio.file.Files.setAttribute(d, "unix:gid", uid);
      }
      List<String> first = asUid(uid, home, tmp);
      assertTrue(first.contains(EXPECTED), String.join("\n", first));
      List<String> second = asUid(uid, home, tmp);
      assertTrue(second.contains(EXPECTED.replace("compiled=true", "compiled=false")),
          "the second run loads the cached binary\n" + String.join("\n", second));
      assertTrue(java.nio.file.Files.isDirectory(home.resolve(".cache/mpi-build/entries")), "cached under $HOME");
      assertTrue(java.nio.file.Files.isDirectory(tmp.resolve("mpi-build-" + uid)), "its native-library directory");
    } finally {
      Mpirun.delete(home);
      Mpirun.delete(tmp);
    }
  }

  private static List<String> asUid(int uid, Path home, Path tmp) throws IOException, InterruptedException {
    List<String> cmd = List.of("/usr/bin/setpriv", "--reuid", Integer.toString(uid), "--regid", Integer.toString(uid),
        "--clear-groups", "java", "-Djava.io.tmpdir=" + tmp, "-cp", System.getProperty("mpibuild.it.classpath"),
        "org.mpibuild.programs.LocalBuild");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().remove("XDG_RUNTIME_DIR");
    pb.environment().remove("MPI_BUILD_CACHE_DIR");
    pb.environment().remove("MPI_BUILD_SIGNING_KEY");
    pb.environment().remove("MPI_BUILD_TRUSTED_KEYS");
    pb.environment().remove("XDG_CACHE_HOME");
    pb.environment().remove("XDG_CONFIG_HOME");
    pb.environment().put("HOME", home.toString());
    pb.environment().put("POCL_CACHE_DIR", tmp.resolve("pocl").toString());
    Process p = pb.start();
    p.getOutputStream().close();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("the run as uid " + uid + " did not finish in 120 s");
    }
    List<String> lines = new ArrayList<>(new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines().toList());
    lines.add("exit=" + p.exitValue());
    return lines;
  }
}
