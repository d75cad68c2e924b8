package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/** `bin/mpi-build cache ...` end to end, against a cache that a real 2-rank demo job made. */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class CacheCliIT {
  static Path cache;

  /** The trailer at the end of every entry: the signer's public key, its signature and its seal. */
  static final int SIGNATURE_TRAILER = 44 + 64 + 32;

  record Run(int exit, String out, String err) {
    String all() {
      return "exit " + exit + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
    }
  }

  @BeforeAll
  static void makeCacheWithARealJob() throws Exception {
    cache = Files.createTempDirectory("mpi-build-cli-cache").resolve("cache");
    Mpirun.Job job = Mpirun.run(2, 300, Map.of("MPI_BUILD_CACHE_DIR", cache.toString()), "org.mpibuild.examples.Demo");
    try {
      assertEquals(0, job.exitCode(), job.describe());
    } finally {
      Mpirun.delete(job.dir());
    }
  }

  @AfterAll
  static void cleanUp() {
    Mpirun.delete(cache.getParent());
  }

  static Run cli(String... args) throws IOException, InterruptedException {
    return cli(java.util.Map.of(), args);
  }

  /** {@link #cli(String...)} with {@code env} added to the command's environment. */
  static Run cli(java.util.Map<String, String> env, String... args) throws IOException, InterruptedException {
    List<String> cmd = new java.util.ArrayList<>(List.of(Mpirun.REPO.resolve("bin/mpi-build").toString(), "cache"));
    cmd.addAll(List.of(args));
    Path out = Files.createTempFile("cli", ".out");
    Path err = Files.createTempFile("cli", ".err");
    try {
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
      pb.environment().putAll(env);
      Process p = pb.start();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AssertionError("mpi-build cache " + String.join(" ", args) + " did not finish");
      }
      return new Run(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }

  static Path onlyEntry() throws IOException {
    try (Stream<Path> s = Files.list(cache.resolve("entries"))) {
      List<Path> all = s.toList();
      assertEquals(1, all.size(), all.toString());
      return all.get(0);
    }
  }

  @Test
  @Order(1)
  void statsAndLsDescribeTheJobsEntry() throws Exception {
    Run stats = cli("stats", "--json", "--dir", cache.toString());
    assertEquals(0, stats.exit(), stats.all());
    assertEquals(1, json(stats).get("entries").asInt(), stats.all());
    assertEquals(0, json(stats).get("corrupt_entries").asInt(), stats.all());
    Run ls = cli("ls", "--dir", cache.toString());
    assertEquals(0, ls.exit(), ls.all());
    String key = onlyEntry().getFileName().toString().substring(0, 16);
    assertTrue(ls.out().startsWith(key) && ls.out().contains("opencl") && ls.out().contains("saxpy"), ls.all());
    Run json = cli("ls", "--json", "--dir", cache.toString());
    assertEquals("[\"saxpy\"]", json(json).get("kernels").toString(), json.all());
    assertEquals("ok", json(json).get("status").asText(), json.all());
  }

  @Test
  @Order(2)
  void verifyFindsAFlippedByteAndRemovesIt() throws Exception {
    Run ok = cli("verify", "--dir", cache.toString());
    assertEquals(0, ok.exit(), ok.all());
    assertTrue(ok.out().contains("1 ok, 0 bad"), ok.all());
    Path entry = onlyEntry();
    Path backup = Files.copy(entry, cache.resolve("good.kbin.bak"));
    byte[] b = Files.readAllBytes(entry);
    b[b.length - 1 - SIGNATURE_TRAILER] ^= 1; // the binary's last byte, before the entry's signature
    Files.write(entry, b);
    Run bad = cli("verify", "--dir", cache.toString());
    assertEquals(1, bad.exit(), bad.all());
    assertTrue(bad.out().contains("SHA-256"), bad.all());
    Run removed = cli("verify", "--remove", "--dir", cache.toString());
    assertEquals(0, removed.exit(), removed.all());
    assertTrue(!Files.exists(entry), "moved aside");
    Files.move(backup, entry);
  }

  @Test
  @Order(3)
  void usageErrorsExitWithTwo() throws Exception {
    Run r = cli("gc", "--max-age", "soon", "--dir", cache.toString());
    assertEquals(2, r.exit(), r.all());
    assertTrue(r.err().contains("--max-age 'soon'"), r.all());
    assertEquals(2, cli("frobnicate").exit());
    assertEquals(1, cli("stats", "--dir", cache.resolve("nope").toString()).exit());
  }

  @Test
  @Order(4)
  void unsafeDirectoryIsRefusedForWriting() throws Exception {
    Files.setPosixFilePermissions(cache, PosixFilePermissions.fromString("rwxrwxrwx"));
    try {
      Run r = cli("clear", "--dir", cache.toString());
      assertEquals(1, r.exit(), r.all());
      assertTrue(r.err().contains("world-writable") && r.err().contains("MPI_BUILD_CACHE_SHARED"), r.all());
    } finally {
      Files.setPosixFilePermissions(cache, PosixFilePermissions.fromString("rwx------"));
    }
  }

  @Test
  @Order(5)
  void gcToASizeAndClearEmptyTheCache() throws Exception {
    Run gc = cli("gc", "--max-size", "0", "--dir", cache.toString());
    assertEquals(0, gc.exit(), gc.all());
    assertTrue(gc.out().contains("0 entries left"), gc.all());
    Run clear = cli("clear", "--dir", cache.toString());
    assertEquals(0, clear.exit(), clear.all());
    Run stats = cli("stats", "--json", "--dir", cache.toString());
    assertEquals(0, json(stats).get("entries").asInt(), stats.all());
  }

  /** The first line of a command's output, as JSON. */
  static com.fasterxml.jackson.databind.JsonNode json(Run r) {
    try {
      return new com.fasterxml.jackson.databind.ObjectMapper().readTree(r.out().lines().findFirst().orElse(""));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new AssertionError("not JSON: " + r.all(), e);
    }
  }
}
