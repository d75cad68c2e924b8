package org.mpibuild.internal.manifest;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;

class ManifestWriterTest {
  @Test
  void aLineRecordsTheLaunchShapesOnlyWhereNamed() {
    KernelSource plain = KernelSource.of("__kernel void k() {}").withKernels("k");
    assertEquals("{\"backend\":\"opencl\",\"targets\":[\"t\"],\"kernels\":[\"k\"],\"options\":\"\","
        + "\"source\":\"__kernel void k() {}\"}", ManifestWriter.line("opencl", List.of("t"), plain));
    KernelSource shaped = plain.withLaunchShapes(LaunchShape.of("k", 16, 8),
        LaunchShape.of("k", 64).withGlobalSize(1 << 20).withGlobalOffset(4));
    assertEquals("{\"backend\":\"opencl\",\"targets\":[\"t\"],\"kernels\":[\"k\"],\"options\":\"\","
        + "\"source\":\"__kernel void k() {}\",\"launch\":[{\"kernel\":\"k\",\"local\":[16,8]},"
        + "{\"kernel\":\"k\",\"local\":[64],\"global\":[1048576],\"offset\":[4]}]}",
        ManifestWriter.line("opencl", List.of("t"), shaped));
  }
}
