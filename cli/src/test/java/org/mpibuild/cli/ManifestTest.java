package org.mpibuild.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;

class ManifestTest {
  @Test
  void recordedLaunchShapesComeBackAsTheRequestHadThem(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("kernels.jsonl");
    Files.writeString(file, "{\"backend\":\"opencl\",\"targets\":[\"t\"],\"kernels\":[\"k\"],\"options\":\"-DX\","
        + "\"source\":\"__kernel void k() {}\",\"launch\":[{\"kernel\":\"k\",\"local\":[16,8]},"
        + "{\"kernel\":\"k\",\"local\":[64],\"global\":[1048576],\"offset\":[4]}]}\n"
        + "{\"backend\":\"opencl\",\"kernels\":[],\"source\":\"__kernel void j() {}\"}\n");
    List<ManifestReader.Entry> entries = ManifestReader.read(file);
    assertEquals(KernelSource.of("__kernel void k() {}").withKernels("k").withOptions("-DX").withLaunchShapes(
        LaunchShape.of("k", 16, 8), LaunchShape.of("k", 64).withGlobalSize(1 << 20).withGlobalOffset(4)),
        entries.get(0).request());
    assertEquals(KernelSource.of("__kernel void j() {}"), entries.get(1).request(), "no launch: no shapes");
  }

  @Test
  void aBadShapeNamesTheLineAndTheValue(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("kernels.jsonl");
    Files.writeString(file, "{\"source\":\"x\",\"launch\":[{\"kernel\":\"k\",\"local\":[16,\"8\"]}]}\n");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ManifestReader.read(file));
    assertTrue(e.getMessage().contains(":1: not a manifest entry") && e.getMessage().contains("\"8\""), e.getMessage());
  }

  @Test
  void aByteThatIsNotUtf8NamesTheFileTheLineAndTheColumn(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("kernels.jsonl");
    byte[] good = "{\"source\":\"__kernel void k() {}\"}\n# caf\u00e9\n".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    byte[] bad = "{\"source\":\"__kernel void k() {} // \u00ff\"}\n".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
    Files.write(file, java.nio.ByteBuffer.allocate(good.length + bad.length).put(good).put(bad).array());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ManifestReader.read(file));
    assertEquals(file + ":3: not UTF-8: byte 0xFF at column 36", e.getMessage());
  }
}
