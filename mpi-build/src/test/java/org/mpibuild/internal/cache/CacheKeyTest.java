package org.mpibuild.internal.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;

class CacheKeyTest {
  static final String SOURCE = "#include \"common.h\"\n__kernel void k(__global float* x) { x[0] = SCALE; }\n";

  static String key(KernelSource r) {
    return CacheKey.of(r, "opencl", "compiler 1.0", "device A");
  }

  @Test
  void launchShapesArePartOfTheKeyAndNoShapesKeepTheOldKey() {
    KernelSource plain = KernelSource.of("__kernel void k() {}");
    KernelSource shaped = plain.withLaunchShapes(LaunchShape.of("k", 16, 16));
    assertNotEquals(key(plain), key(shaped));
    assertNotEquals(key(shaped), key(plain.withLaunchShapes(LaunchShape.of("k", 8, 8))));
    assertNotEquals(key(shaped), key(plain.withLaunchShapes(LaunchShape.of("k", 16, 16).withGlobalSize(1 << 17, 16))));
    assertEquals(key(shaped), key(plain.withLaunchShapes(LaunchShape.of("k", 16, 16))));
    assertEquals(key(plain), key(plain.withLaunchShapes()), "no shapes is the key of a request without any");
  }

  @Test
  void changingAnIncludedHeaderChangesTheKey(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("common.h"), "#include <nested/deep.h>\n");
    Files.createDirectories(dir.resolve("nested"));
    Files.writeString(dir.resolve("nested/deep.h"), "#define SCALE 1.0f\n");
    KernelSource r = KernelSource.of(SOURCE).withOptions("-I " + dir);
    String before = key(r);
    assertEquals(before, key(r), "the key is deterministic");
    Files.writeString(dir.resolve("nested/deep.h"), "#define SCALE 2.0f\n");
    String after = key(r);
    assertNotEquals(before, after, "a nested header's change must change the key");
    Files.writeString(dir.resolve("nested/deep.h"), "#define SCALE 1.0f\n");
    assertEquals(before, key(r), "restoring the header restores the key");
  }

  @Test
  void includeDirectoriesAreSearchedInOrder(@TempDir Path dir) throws Exception {
    Path a = Files.createDirectories(dir.resolve("a"));
    Path b = Files.createDirectories(dir.resolve("b"));
    Files.writeString(b.resolve("common.h"), "#define SCALE 3.0f\n");
    String onlyB = key(KernelSource.of(SOURCE).withOptions("-I" + a + " -I" + b));
    Files.writeString(a.resolve("common.h"), "#define SCALE 4.0f\n");
    assertNotEquals(onlyB, key(KernelSource.of(SOURCE).withOptions("-I" + a + " -I" + b)),
        "a header that now shadows the other must change the key");
  }

  @Test
  void everyInputThatChangesTheBinaryChangesTheKey() {
    KernelSource r = KernelSource.of(SOURCE).withKernels("k").withOptions("-D SCALE=1");
    String base = key(r);
    assertNotEquals(base, key(KernelSource.of(SOURCE + " ").withKernels("k").withOptions("-D SCALE=1")));
    assertNotEquals(base, key(r.withOptions("-D SCALE=2")));
    assertNotEquals(base, key(r.withKernels("k", "j")));
    assertNotEquals(base, CacheKey.of(r, "cuda", "compiler 1.0", "device A"));
    assertNotEquals(base, CacheKey.of(r, "opencl", "compiler 1.1", "device A"));
    assertNotEquals(base, CacheKey.of(r, "opencl", "compiler 1.0", "device B"));
    assertEquals(64, base.length());
  }

  @Test
  void aComputedIncludeCoversEveryFileUnderTheIncludeDirectories(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("k.h"), "#define SCALE 1.0f\n");
    String computed = "#define HDR \"k.h\"\n#include HDR\n__kernel void k(__global float* x) { x[0] = SCALE; }\n";
    KernelSource r = KernelSource.of(computed).withOptions("-I " + dir);
    String before = key(r);
    Files.writeString(dir.resolve("k.h"), "#define SCALE 2.0f\n");
    assertNotEquals(before, key(r), "editing the header a computed include names must change the key");
  }

  @Test
  void aComputedIncludeWithoutIncludeDirectoriesIsNotCached() {
    String computed = "#define HDR <k.h>\n#include HDR\n__kernel void k() {}\n";
    CacheKey.Uncacheable e = org.junit.jupiter.api.Assertions.assertThrows(CacheKey.Uncacheable.class,
        () -> key(KernelSource.of(computed)));
    org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("#include HDR is computed"), e.getMessage());
  }
}
