package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Async, batch and heterogeneous builds under a real mpirun with OpenCL on PoCL ({@code Scale}), the
 * record-then-precompile round trip, and the precompile and doctor commands' exit codes.
 */
class ScaleIT {
  private static final Pattern RESULT = Pattern.compile("^RESULT mode=(\\S+) rank=(\\d+) size=(\\d+) (.*)$");

  /** Runs Scale with {@code args} and returns every rank's key=value fields, checking every rank reported. */
  static List<Map<String, String>> scale(int ranks, Map<String, String> env, String... args) {
    Mpirun.Job job = Mpirun.run(ranks, 300, env, "org.mpibuild.programs.Scale", args);
    try {
      List<Map<String, String>> out = new ArrayList<>();
      for (int r = 0; r < ranks; r++) {
        Map<String, String> fields = null;
        for (String line : job.stdoutByRank().get(r)) {
          Matcher m = RESULT.matcher(line);
          if (m.matches()) {
            fields = new HashMap<>();
            fields.put("rank", m.group(2));
            for (String kv : m.group(4).split(" ")) {
              int eq = kv.indexOf('=');
              if (eq > 0) {
                fields.put(kv.substring(0, eq), kv.substring(eq + 1));
              }
            }
          }
        }
        if (fields == null) {
          throw new AssertionError("rank " + r + " reported nothing\n" + job.describe());
        }
        assertEquals("true", fields.get("ok"), "rank " + r + ": " + fields + "\n" + job.describe());
        out.add(fields);
      }
      assertEquals(0, job.exitCode(), job.describe());
      assertTrue(job.orphans().isEmpty(), "left running: " + job.orphans());
      return out;
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"SINGLE", "FUNNELED", "SERIALIZED", "MULTIPLE"})
  void asyncBuildsOverlapComputationUnderEveryThreadLevel(String level) {
    for (Map<String, String> rank : scale(2, Map.of(), "async", level)) {
      assertEquals(level, rank.get("provided"), "Open MPI provides the level asked for: " + rank);
      assertEquals(level.equals("MULTIPLE") ? "thread" : "caller", rank.get("progress"), rank.toString());
      assertEquals("3", rank.get("verified"), rank.toString());
      assertEquals("3", rank.get("compiles"), "three compiles in the job: " + rank);
      assertTrue(Integer.parseInt(rank.get("submit_ms")) < 1000, "starting builds returned at once: " + rank);
      assertTrue(Integer.parseInt(rank.get("done_during_compute")) >= 1, "built while computing: " + rank);
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2, 4})
  void batchBuildsGiveEveryRankEveryKernelWithEachCompileCountedOnce(int ranks) {
    for (Map<String, String> rank : scale(ranks, Map.of("MPI_BUILD_CACHE", "off"), "batch", "8")) {
      assertEquals("8", rank.get("loaded"), rank.toString());
      assertEquals("8", rank.get("verified"), rank.toString());
      assertEquals("8", rank.get("compiles"), "each kernel compiled once in the job: " + rank);
    }
  }

  @Test
  void ranksOfTwoTargetsEachGetTheirOwnTargetsBinary() {
    for (Map<String, String> rank : scale(4, Map.of(), "hetero")) {
      int r = Integer.parseInt(rank.get("rank"));
      assertEquals("2", rank.get("groups"), rank.toString());
      assertEquals(Integer.toString(r % 2), rank.get("target_group"), rank.toString());
      assertEquals("true", rank.get("own_target"), rank.toString());
      assertEquals("true", rank.get("verified"), "the kernel computes its own group's value: " + rank);
      assertEquals(r % 2, Integer.parseInt(rank.get("built_on")) % 2, "built by a rank of its own group: " + rank);
      assertEquals("2", rank.get("compiles"), "one compile per target: " + rank);
    }
  }

  static Commands.Run cli(Map<String, String> env, String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of(Mpirun.REPO.resolve("bin/mpi-build").toString()));
    cmd.addAll(List.of(args));
    return Commands.run(Mpirun.REPO, env, 300, cmd);
  }

  static String demoSummary(Map<String, String> env) {
    Mpirun.Job job = Mpirun.run(2, 300, env, "org.mpibuild.examples.Demo");
    try {
      assertEquals(0, job.exitCode(), job.describe());
      return job.stdoutByRank().get(0).stream().filter(l -> l.startsWith("summary:")).findFirst()
          .orElseThrow(() -> new AssertionError("no summary\n" + job.describe()));
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  @Test
  void recordThenPrecompileThenAWarmRunWithNoCompile() throws Exception {
    Path dir = Files.createTempDirectory("mpi-build-manifest");
    try {
      Path manifest = dir.resolve("kernels.jsonl");
      String first = demoSummary(Map.of("MPI_BUILD_RECORD", manifest.toString(),
          "MPI_BUILD_CACHE_DIR", dir.resolve("first-cache").toString()));
      assertTrue(first.contains("compiles=1"), first);
      List<String> lines = Files.readAllLines(manifest);
      assertEquals(1, lines.size(), "one request recorded once, by one rank: " + lines);
      assertTrue(lines.get(0).contains("\"kernels\":[\"saxpy\"]") && lines.get(0).contains("\"backend\":\"opencl\""),
          lines.get(0));

      Path cache = dir.resolve("precompiled");
      Commands.Run pre = cli(Map.of(), "precompile", "-np", "2", manifest.toString(), "--dir", cache.toString(), "--backend",
          "opencl", "--no-progress");
      assertEquals(0, pre.exit(), pre.out());
      assertTrue(pre.out().contains("[1/1] kernels [saxpy] ok"), pre.out());
      assertTrue(pre.out().matches("(?s).*compiled\\s+1\\n.*failed\\s+0\\n.*"), pre.out());

      String warm = demoSummary(Map.of("MPI_BUILD_CACHE_DIR", cache.toString()));
      assertTrue(warm.contains("compiles=0") && warm.contains("cache_hits=1"), warm);
    } finally {
      Mpirun.delete(dir);
    }
  }

  @Test
  void precompileListsFailuresWithTheirLogsAndExitsOne() throws Exception {
    Path dir = Files.createTempDirectory("mpi-build-manifest");
    try {
      Path manifest = dir.resolve("kernels.jsonl");
      Files.writeString(manifest, String.join("\n",
          "{\"backend\":\"opencl\",\"kernels\":[\"good\"],\"options\":\"\",\"source\":\"__kernel void good(__global float* y) { y[0] = 1.0f; }\"}",
          "{\"backend\":\"opencl\",\"kernels\":[\"bad\"],\"options\":\"\",\"source\":\"__kernel void bad(__global float* y) { y[0] = undeclared_name; }\"}",
          ""));
      Commands.Run local = cli(Map.of(), "precompile", manifest.toString(), "--dir", dir.resolve("cache").toString(),
          "--backend", "opencl");
      assertEquals(1, local.exit(), local.out());
      assertTrue(local.out().contains("FAILED: line 2"), local.out());
      assertTrue(local.out().contains("undeclared_name"), "the build log is shown: " + local.out());
      assertTrue(local.out().matches("(?s).*compiled\\s+1\\n.*failed\\s+1\\n.*"), local.out());

      Commands.Run missing = cli(Map.of(), "precompile", dir.resolve("nope.jsonl").toString());
      assertEquals(1, missing.exit(), missing.out());
      assertTrue(missing.out().contains("cannot read the manifest"), missing.out());

      Files.writeString(manifest, "{\"source\": 3}\n");
      Commands.Run bad = cli(Map.of(), "precompile", manifest.toString());
      assertEquals(1, bad.exit(), bad.out());
      assertTrue(bad.out().contains(":1: not a manifest entry"), bad.out());

      Commands.Run usage = cli(Map.of(), "precompile", "--no-such-option", manifest.toString());
      assertEquals(2, usage.exit(), usage.out());
    } finally {
      Mpirun.delete(dir);
    }
  }

  @Test
  void doctorExitsZeroHereAndOneWithTheFixWhenABackendIsMissing() throws Exception {
    Commands.Run ok = cli(Map.of("MPI_BUILD_BACKEND", "opencl"), "doctor");
    assertEquals(0, ok.exit(), ok.out());
    assertTrue(ok.out().contains("ok    opencl: device [") && ok.out().contains("mpi.jar binding:"), ok.out());

    Commands.Run missing = cli(Map.of("MPI_BUILD_BACKEND", "vulkan"), "doctor");
    assertEquals(1, missing.exit(), missing.out());
    assertTrue(missing.out().contains("backend 'vulkan'") && missing.out().contains("fix:"), missing.out());

    Commands.Run badSetting = cli(Map.of("MPI_BUILD_COMPILE_TIMEOUT", "soon"), "doctor");
    assertEquals(1, badSetting.exit(), badSetting.out());
    assertTrue(badSetting.out().contains("MPI_BUILD_COMPILE_TIMEOUT"), badSetting.out());
  }
}
