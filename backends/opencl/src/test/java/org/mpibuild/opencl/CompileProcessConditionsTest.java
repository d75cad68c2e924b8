package org.mpibuild.opencl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;
import org.mpibuild.MpiBuild;

/**
 * The compile process (a request with launch shapes on PoCL) starts in the parent's conditions, not its
 * accidents, and shapes the device cannot launch are refused before anything is compiled.
 */
class CompileProcessConditionsTest {
  static final KernelSource SHAPED = KernelSource.of("__kernel void add(__global float* y) { y[get_global_id(0)] += 1.0f; }")
      .withKernels("add").withLaunchShapes(LaunchShape.of("add", 4));

  /** A program that builds {@link #SHAPED} on one rank and says so: run in a JVM with a hostile environment. */
  public static void main(String[] args) {
    try (MpiBuild mpiBuild = MpiBuild.builder().local().build(); Kernel kernel = mpiBuild.mpiBuildKernel(SHAPED, 0)) {
      System.out.println("built " + kernel.kernelNames());
    }
  }

  /**
   * JAVA_TOOL_OPTIONS reaches every JVM: a collector of the user's choice made the compile process fail with
   * "Multiple garbage collectors selected" (it runs with the serial one), and an agent that listens on a port
   * would make it fail for the port.
   */
  @Test
  void optionsForEveryJvmDoNotReachTheCompileProcess() throws Exception {
    ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
        System.getProperty("java.class.path"), CompileProcessConditionsTest.class.getName()).redirectErrorStream(true);
    pb.environment().put("JAVA_TOOL_OPTIONS", "-XX:+UseParallelGC");
    pb.environment().put("MPI_BUILD_CACHE", "off");
    Process p = pb.start();
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS));
    assertEquals(0, p.exitValue(), out);
    assertTrue(out.contains("built [add]"), out);
  }

  @Test
  void theCompileProcessGetsTheParentsTemporaryDirectory() {
    assertEquals(List.of("java.io.tmpdir", "java.library.path"), PoclSpecialization.INHERITED_PROPERTIES);
    assertTrue(PoclSpecialization.JVM_OPTION_VARIABLES.containsAll(List.of("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS",
        "_JAVA_OPTIONS")));
  }

  /** PoCL's CPU device allows 4096 work-items: 8192 was built and refused at launch, 2^32 crashed the compiler. */
  @Test
  void aShapeBeyondTheDevicesLimitsIsRefusedBeforeAnyCompile() {
    try (MpiBuild mpiBuild = MpiBuild.builder().local().build()) {
      for (long[] local : List.of(new long[] {8192}, new long[] {1L << 32, 1L << 32, 4}, new long[] {Long.MAX_VALUE},
          new long[] {64, 64, 2})) {
        KernelSource request = SHAPED.withLaunchShapes(LaunchShape.of("add", local));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> mpiBuild.mpiBuildKernel(request, 0));
        assertTrue(e.getMessage().startsWith("launch shape 'add ") && e.getMessage().contains("exceeds this device's maximum"),
            e.getMessage());
        assertEquals(0, mpiBuild.statistics().compiles(), "nothing was compiled for " + e.getMessage());
      }
    }
  }
}
