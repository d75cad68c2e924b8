package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Stream-ordered send and receive under mpirun with OpenCL on PoCL ({@code Pipeline}): a ping-pong (2
 * ranks) and a ring (4 ranks) of kernels with random delays, no host synchronization in the loop, the
 * final token checked; and the same harness with the send deliberately not ordered, which must produce
 * wrong data. Where a GPU and nvcc are, the CUDA messenger's {@code CudaStreams} in one JVM.
 */
class StreamIT {
  static Map<String, String> pipeline(int ranks, String mode, int rounds) {
    Mpirun.Job job = Mpirun.run(ranks, 300, Map.of("MPI_BUILD_CACHE", "off"), "org.mpibuild.programs.Pipeline",
        mode, Integer.toString(rounds), "20000", "7");
    try {
      String line = job.stdoutByRank().get(0).stream().filter(l -> l.startsWith("RESULT ")).findFirst()
          .orElseThrow(() -> new AssertionError("rank 0 reported nothing\n" + job.describe()));
      Map<String, String> fields = new HashMap<>();
      for (String kv : line.substring("RESULT ".length()).split(" ")) {
        fields.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
      }
      assertEquals(0, job.exitCode(), job.describe());
      assertTrue(job.orphans().isEmpty(), "left running: " + job.orphans());
      return fields;
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {2, 4})
  void kernelsAndMessagesStayInOrderWithoutHostSynchronization(int ranks) {
    Map<String, String> r = pipeline(ranks, "ordered", 8);
    assertEquals("true", r.get("correct"), r.toString());
    assertEquals(r.get("expected"), r.get("got"), r.toString());
    assertTrue(Double.parseDouble(r.get("host_seconds")) < Double.parseDouble(r.get("seconds")),
        "the host thread was free before the pipeline ended: " + r);
  }

  @Test
  void theBenchmarksFormRunsEveryModesLoopsAfterTheirWarmUp() {
    // make bench-stream's job: ordered, manual, manual, ordered, each after QUICK rounds with delays 200 times
    // shorter, then WARMUP rounds, all unmeasured
    Mpirun.Job job = Mpirun.run(2, 300, Map.of("MPI_BUILD_CACHE", "off"), "org.mpibuild.programs.Pipeline",
        "ordered,manual,manual,ordered", "3", "2000", "7", "1", "4");
    try {
      assertEquals(0, job.exitCode(), job.describe());
      List<String> out = job.stdoutByRank().get(0);
      List<String> results = out.stream().filter(l -> l.startsWith("RESULT ")).toList();
      assertEquals(4, results.size(), "one RESULT per loop, the warm-up rounds unreported: " + out);
      assertTrue(results.stream().allMatch(l -> l.contains(" rounds=3 ") && l.contains(" correct=true ")
          && l.contains(" jit_seconds=")), results.toString());
      assertEquals(List.of("ordered", "manual", "manual", "ordered"), results.stream()
          .map(l -> l.substring("RESULT mode=".length(), l.indexOf(' ', "RESULT mode=".length()))).toList());
      assertEquals(2, out.stream().filter(l -> l.startsWith("RUN mode=ordered ")).count(), out.toString());
      List<String> warmups = out.stream().filter(l -> l.startsWith("WARMUP ")).toList();
      assertEquals(8, warmups.size(), "a quick and a warm-up pass before each loop: " + out);
      for (int i = 0; i < warmups.size(); i++) {
        String pass = i % 2 == 0 ? " rounds=4 spin=10 correct=true " : " rounds=1 spin=2000 correct=true ";
        assertTrue(warmups.get(i).contains(pass), "pass " + i + " is not" + pass + ": " + warmups);
      }
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {2, 4})
  void theSameHarnessCatchesAnUnorderedSend(int ranks) {
    Map<String, String> r = pipeline(ranks, "unordered", 8);
    assertEquals("false", r.get("correct"), "sending without waiting for the queue must give wrong data: " + r);
    assertNotEquals(r.get("expected"), r.get("got"), r.toString());
  }

  /**
   * The CUDA messenger on a GPU ({@code CudaStreams}, as {@code scripts/gpu-check} runs it): 2 and 3 ranks in one
   * JVM, each with a CUDA context of its own, every part on every rank. Skips, saying why, without a GPU.
   */
  @ParameterizedTest
  @ValueSource(ints = {2, 3})
  void cudaStreamOrderedMessagesOnAGpu(int ranks) throws Exception {
    boolean gpu = java.nio.file.Files.exists(java.nio.file.Path.of("/dev/nvidia0"));
    boolean nvcc = System.getenv("MPI_BUILD_NVCC") != null
        || java.util.Arrays.stream(System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator))
            .anyMatch(d -> java.nio.file.Files.isExecutable(java.nio.file.Path.of(d, "nvcc")))
        || java.nio.file.Files.isExecutable(java.nio.file.Path.of("/usr/local/cuda/bin/nvcc"));
    if (!gpu || !nvcc) {
      String why = (!gpu ? "no usable GPU (/dev/nvidia0 is absent)" : "no nvcc (on the PATH, in /usr/local/cuda/bin or "
          + "MPI_BUILD_NVCC)") + ": StreamMessenger runs on a GPU through scripts/gpu-check";
      System.out.println("StreamIT: CUDA variant skipped: " + why);
      Assumptions.abort(why);
    }
    String javaBin = java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Commands.Run run = Commands.run(java.nio.file.Path.of("."), Map.of("MPI_BUILD_CACHE", "off"), 200, List.of(javaBin,
        "-Dmpibuild.mode=local", "-cp", Mpirun.classpath(), "org.mpibuild.programs.CudaStreams",
        Integer.toString(ranks)));
    assertEquals(0, run.exit(), run.out());
    for (String part : List.of("ring", "allreduce", "bcast", "two-streams", "control")) {
      assertEquals(ranks, run.out().lines().filter(l -> l.startsWith("CUDASTREAMS part=" + part + " ")
          && l.contains(" ok=true ")).count(), part + ": " + run.out());
    }
  }
}
