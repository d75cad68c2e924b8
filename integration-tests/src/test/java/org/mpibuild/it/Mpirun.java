package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Runs a program of this module under a real mpirun, one rank per process, each rank's output in its own
 * file, each rank with a private empty PoCL cache. A job that outlives its deadline is killed with all of
 * its processes, and the test fails.
 */
final class Mpirun {
  static final Path REPO = Path.of(System.getProperty("mpibuild.it.repo", "..")).toAbsolutePath().normalize();

  /** One finished job: mpirun's exit status, its own output, and each rank's standard output. */
  record Job(int exitCode, String mpirunOutput, TreeMap<Integer, List<String>> stdoutByRank, Path dir, long millis,
      List<String> orphans, long endEpochMillis) {

    /** Every rank's standard error. */
    String stderr(int rank) {
      try {
        Path err = dir.resolve("out/1/rank." + rank + "/stderr");
        return Files.exists(err) ? Files.readString(err) : "";
      } catch (IOException e) {
        return "(cannot read: " + e + ")";
      }
    }

    String describe() {
      StringBuilder sb = new StringBuilder("mpirun exit ").append(exitCode).append('\n').append(mpirunOutput);
      stdoutByRank.forEach((r, lines) -> sb.append("\n--- rank ").append(r).append(" stdout\n")
          .append(String.join("\n", lines)));
      try {
        for (int r : stdoutByRank.keySet()) {
          Path err = dir.resolve("out/1/rank." + r + "/stderr");
          if (Files.exists(err)) {
            sb.append("\n--- rank ").append(r).append(" stderr\n").append(Files.readString(err));
          }
        }
      } catch (IOException e) {
        sb.append("\n(cannot read stderr: ").append(e).append(')');
      }
      return sb.toString();
    }
  }

  private Mpirun() {}

  static Job run(int ranks, long timeoutSeconds, String mainClass, String... args) {
    return run(ranks, timeoutSeconds, java.util.Map.of(), mainClass, args);
  }

  /**
   * Runs a job with extra environment variables for every rank. Unless {@code env} names one, the job gets
   * a kernel cache directory of its own, empty at start.
   */
  static Job run(int ranks, long timeoutSeconds, java.util.Map<String, String> env, String mainClass, String... args) {
    return runOn(classpath(), ranks, timeoutSeconds, env, mainClass, args);
  }

  /** The class path of the programs: this module's jar and its dependencies. */
  static String classpath() {
    String classpath = System.getProperty("mpibuild.it.classpath");
    if (classpath == null) {
      fail("mpibuild.it.classpath is not set: run the integration tests through Maven (make test)");
    }
    return classpath;
  }

  /** As {@link #run(int, long, java.util.Map, String, String...)}, on another class path. */
  static Job runOn(String classpath, int ranks, long timeoutSeconds, java.util.Map<String, String> env,
      String mainClass, String... args) {
    try {
      Path dir = Files.createTempDirectory("mpi-build-it");
      // Each job keeps Open MPI's session directory to itself (the kit's mpirun options say why).
      Path session = Files.createDirectories(dir.resolve("ompi"));
      List<String> cmd = new ArrayList<>(org.mpibuild.testkit.Mpirun.command(ranks, session));
      cmd.addAll(List.of("--output-filename", dir.resolve("out").toString(),
          "-x", "MPI_BUILD_POCL_CACHE_ROOT=" + dir.resolve("pocl"),
          "-x", "MPI_BUILD_JAVA_OPTS=-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xmx256m -Xss1m -Dmpibuild.it.job=" + dir));
      java.util.Map<String, String> all = new java.util.TreeMap<>(env);
      all.putIfAbsent("MPI_BUILD_CACHE_DIR", dir.resolve("cache").toString());
      all.putIfAbsent("MPI_BUILD_BACKEND", "opencl"); // the OpenCL programs; CUDA tests say "cuda"
      if (System.getenv("MPI_BUILD_SIGNING_KEY") != null) {
        all.putIfAbsent("MPI_BUILD_SIGNING_KEY", System.getenv("MPI_BUILD_SIGNING_KEY"));
      }

      all.forEach((k, v) -> cmd.addAll(List.of("-x", k + "=" + v)));
      cmd.addAll(List.of(REPO.resolve("bin/mpi-build-rank").toString(), "-cp", classpath, mainClass));
      cmd.addAll(List.of(args));
      Path mpirunLog = dir.resolve("mpirun.log");
      long t0 = System.nanoTime();
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(mpirunLog.toFile()).start();
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        orphans(dir.toString(), 0);
        fail("mpirun -np " + ranks + " " + mainClass + " did not finish within " + timeoutSeconds + " s:\n"
            + Files.readString(mpirunLog));
      }
      long millis = (System.nanoTime() - t0) / 1_000_000;
      long end = System.currentTimeMillis();
      List<String> orphans = orphans(dir.toString(), 5000);
      TreeMap<Integer, List<String>> byRank = new TreeMap<>();
      for (int r = 0; r < ranks; r++) {
        Path out = dir.resolve("out/1/rank." + r + "/stdout");
        byRank.put(r, Files.exists(out) ? Files.readAllLines(out, StandardCharsets.UTF_8) : List.of());
      }
      return new Job(p.exitValue(), Files.readString(mpirunLog), byRank, dir, millis, orphans, end);
    } catch (IOException e) {
      throw new AssertionError("cannot run mpirun: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  /**
   * Processes still running whose command line names the job's directory (its mpirun, its JVMs, the
   * compilers they started), after waiting up to {@code graceMillis} for them to end. Any found are
   * killed, so one test's leftovers never disturb the next.
   */
  static List<String> orphans(String marker, long graceMillis) throws InterruptedException {
    long deadline = System.nanoTime() + graceMillis * 1_000_000;
    List<ProcessHandle> left;
    do {
      left = ProcessHandle.allProcesses()
          .filter(h -> h.pid() != ProcessHandle.current().pid())
          .filter(h -> h.info().commandLine().orElse("").contains(marker))
          .toList();
      if (left.isEmpty()) {
        return List.of();
      }
      Thread.sleep(100);
    } while (System.nanoTime() < deadline);
    List<String> described = left.stream().map(h -> h.pid() + " " + h.info().commandLine().orElse("?")).toList();
    killAll(described);
    return described;
  }

  private static void killAll(List<String> described) {
    for (String d : described) {
      ProcessHandle.of(Long.parseLong(d.substring(0, d.indexOf(' ')))).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  static void delete(Path dir) {
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException e) {
      // best effort
    }
  }
}
