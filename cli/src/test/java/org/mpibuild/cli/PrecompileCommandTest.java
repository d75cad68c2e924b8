package org.mpibuild.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mpi-build precompile MANIFEST} alone (local mode), with the kit's fake backend ({@code --backend
 * fake}): exit 0 when every entry is built or cached, 1 when one fails (listed with its build log) or the
 * manifest cannot be read, 2 on usage errors; what it builds is in the cache afterwards.
 */
class PrecompileCommandTest {
  @TempDir
  Path tmp;

  Path manifest(String... lines) throws Exception {
    Path file = tmp.resolve("kernels.jsonl");
    Files.writeString(file, String.join("\n", lines) + "\n");
    return file;
  }

  static String entry(String backend, String kernel, String source) {
    return "{\"backend\":\"" + backend + "\",\"kernels\":[\"" + kernel + "\"],\"source\":\"" + source + "\"}";
  }

  Cli.Run precompile(Path manifest, String... more) {
    String[] args = new String[more.length + 7];
    args[0] = "precompile";
    args[1] = manifest.toString();
    args[2] = "--backend";
    args[3] = "fake";
    args[4] = "--dir";
    args[5] = tmp.resolve("cache").toString();
    args[6] = "--no-progress";
    System.arraycopy(more, 0, args, 7, more.length);
    return Cli.run(args);
  }

  List<JsonNode> cached() {
    Cli.Run ls = Cli.run("cache", "ls", "--json", "--dir", tmp.resolve("cache").toString());
    assertEquals(0, ls.exit(), ls.all());
    return ls.json();
  }

  @Test
  void everyEntryBuiltIsExitZeroAndInTheCacheThenCachedTheSecondTime() throws Exception {
    Path m = manifest(entry("fake", "k", "__kernel void k() {}"), entry("", "j", "__kernel void j() {}"));
    Cli.Run first = precompile(m);
    assertEquals(0, first.exit(), first.all());
    List<JsonNode> entries = cached();
    assertEquals(2, entries.size(), first.all());
    entries.forEach(e -> assertEquals("fake", e.get("backend").asText()));
    Cli.Run second = precompile(m);
    assertEquals(0, second.exit(), second.all());
    assertEquals(2, cached().size(), second.all());
  }

  @Test
  void anEntryRecordedForAnotherBackendIsSkipped() throws Exception {
    Cli.Run r = precompile(manifest(entry("opencl", "k", "__kernel void k() {}"), entry("fake", "j", "__kernel void j() {}")));
    assertEquals(0, r.exit(), r.all());
    assertEquals(1, cached().size(), r.all());
    assertTrue(r.out().contains("opencl"), "says what it skipped\n" + r.all());
  }

  @Test
  void aFailedEntryIsExitOneAndListedWithItsBuildLog() throws Exception {
    Cli.Run r = precompile(manifest(entry("fake", "k", "__kernel void k() {}"), entry("fake", "bad", "syntax error")));
    assertEquals(1, r.exit(), r.all());
    assertTrue(r.out().contains("syntax error here"), "the build log\n" + r.all());
    assertTrue(r.out().contains("bad"), "the kernel\n" + r.all());
    assertEquals(1, cached().stream().filter(e -> e.get("status").asText().equals("ok")).count(), r.all());
  }

  @Test
  void aManifestThatDoesNotExistIsAFailureNamingIt() {
    Path missing = tmp.resolve("missing.jsonl");
    Cli.Run r = precompile(missing);
    assertEquals(1, r.exit(), r.all());
    assertTrue(r.err().contains(missing.toString()), r.all());
  }

  @Test
  void aBadManifestLineIsAFailureNamingTheFileAndTheLine() throws Exception {
    Path m = manifest(entry("fake", "k", "__kernel void k() {}"), "{not json");
    Cli.Run r = precompile(m);
    assertEquals(1, r.exit(), r.all());
    assertTrue(r.err().contains(m + ":2"), r.all());
  }

  @Test
  void aBackendThatDoesNotExistIsAFailureNamingIt() throws Exception {
    Cli.Run r = Cli.run("precompile", manifest(entry("", "k", "__kernel void k() {}")).toString(), "--backend",
        "no-such-backend", "--dir", tmp.resolve("cache").toString());
    assertEquals(1, r.exit(), r.all());
    assertTrue(r.err().contains("no-such-backend"), r.all());
  }

  @Test
  void aBatchRanksThatIsNotANumberIsAUsageError() throws Exception {
    Cli.Run r = precompile(manifest(entry("", "k", "__kernel void k() {}")), "--batch-ranks", "many");
    assertEquals(2, r.exit(), r.all());
    assertTrue(r.err().contains("many"), r.all());
  }
}
