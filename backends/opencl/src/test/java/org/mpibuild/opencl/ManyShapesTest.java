package org.mpibuild.opencl;

import static org.jocl.CL.CL_MEM_COPY_HOST_PTR;
import static org.jocl.CL.CL_MEM_READ_WRITE;
import static org.jocl.CL.CL_TRUE;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clEnqueueNDRangeKernel;
import static org.jocl.CL.clEnqueueReadBuffer;
import static org.jocl.CL.clFinish;
import static org.jocl.CL.clReleaseMemObject;
import static org.jocl.CL.clSetKernelArg;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_mem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;

/**
 * Kernels with shapes of their own: the binary holds each kernel's named functions and nothing else, whether one
 * compile process builds them or, where the kernels times the shapes need more stand-ins than PoCL's binary buffer
 * holds, several do and their binaries are combined.
 */
class ManyShapesTest {
  static final long[] LOCAL = {1, 2, 4, 8};
  static OpenClBackend backend;

  @BeforeAll
  static void open() {
    backend = OpenClDevices.open("Portable", null);
  }

  @AfterAll
  static void close() {
    backend.close();
  }

  static KernelSource request() {
    StringBuilder source = new StringBuilder();
    List<LaunchShape> shapes = new ArrayList<>();
    for (int i = 0; i < LOCAL.length; i++) {
      source.append("__kernel void k").append(i).append("(__global float* y) { y[get_global_id(0)] += ").append(i + 1)
          .append(".0f; }\n");
      shapes.add(LaunchShape.of("k" + i, LOCAL[i]).withGlobalSize(64));
    }
    return KernelSource.of(source.toString()).withKernels("k0", "k1", "k2", "k3").withLaunchShapes(shapes);
  }

  /** Each kernel's work-group functions in the binary, as KERNEL/SPECIALIZATION. */
  static TreeSet<String> functions(byte[] binary) {
    TreeSet<String> out = new TreeSet<>();
    for (PoclBinary.KernelRecord k : PoclBinary.parse(binary).kernels()) {
      k.files().stream().filter(f -> f.specialization() != null).forEach(f -> out.add(k.name() + "/" + f.specialization()));
    }
    return out;
  }

  @Test
  void splitOrWholeTheBinaryHoldsEachKernelsNamedFunctionOnlyAndRuns() {
    KernelSource request = request();
    TreeSet<String> expected = new TreeSet<>();
    for (int i = 0; i < LOCAL.length; i++) {
      expected.add("k" + i + "/" + LOCAL[i] + "-1-1-goffs0-smallgrid");
    }
    PoclSpecialization.Result whole = PoclSpecialization.compile(request, backend.platformIndex, backend.deviceIndex);
    assertEquals(expected, functions(whole.binary()));
    // what a compile process started ahead checks before it hands a binary over
    java.util.Map<String, java.util.Set<String>> named = PoclSpecialization.perKernel(request.launchShapes());
    org.junit.jupiter.api.Assertions.assertNull(PoclCompileProcess.missing(whole.binary(), named));
    assertEquals("k2 4-1-1-goffs0-smallgrid", PoclCompileProcess.missing(
        PoclBinary.keepOnly(whole.binary(), (kernel, spec) -> !kernel.equals("k2")), named));
    // 4 kernels x (4 shapes + the generic one) = 20 stand-ins; with 8 allowed, one shape per compile process
    PoclSpecialization.Result split = PoclSpecialization.compile(request, backend.platformIndex, backend.deviceIndex, 8, List.of());
    assertEquals(expected, functions(split.binary()));
    runsRight(request, split.binary());
  }

  /**
   * A compile shared between 3 ranks: the 4 (kernel, shape) pairs dealt in turn, each part's binary holding its
   * pairs' functions only, the joined binary all of them, loaded and run.
   */
  @Test
  void partsOfASharedCompileHoldTheirPairsAndJoinIntoTheWholeBinary() {
    KernelSource request = request();
    List<String> parts = backend.compileParts(request, 3);
    assertEquals(List.of("k0\t1-1-1-goffs0-smallgrid\nk3\t8-1-1-goffs0-smallgrid\n",
        "k1\t2-1-1-goffs0-smallgrid\n", "k2\t4-1-1-goffs0-smallgrid\n"), parts);
    List<org.mpibuild.spi.Compilation> compiled = new ArrayList<>();
    for (String part : parts) {
      org.mpibuild.spi.Compilation c = backend.compilePart(request, backend.target(), part);
      TreeSet<String> mine = new TreeSet<>();
      part.lines().forEach(l -> mine.add(l.replace('\t', '/')));
      assertEquals(mine, functions(c.binary()), part);
      compiled.add(c);
    }
    org.mpibuild.spi.Compilation joined = backend.joinParts(request, backend.target(), compiled);
    try {
      assertEquals(functions(PoclSpecialization.compile(request, backend.platformIndex, backend.deviceIndex)
          .binary()), functions(joined.binary()));
    } finally {
      joined.program().close();
    }
    runsRight(request, joined.binary());
    assertEquals(List.of(), backend.compileParts(request, 1), "one rank shares nothing");
    assertEquals(4, backend.compileParts(request, 16).size(), "no more parts than pairs");
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> backend.compilePart(request, backend.target(), "k9\t1-1-1\n"));
    org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("k9 1-1-1"), e.getMessage());
  }

  /** Each kernel of {@code binary}, loaded, launched at its shape, adds its number to every element. */
  static void runsRight(KernelSource request, byte[] binary) {
    runsRight(backend, request, binary);
  }

  /** {@link #runsRight(KernelSource, byte[])} on {@code backend}. */
  static void runsRight(OpenClBackend backend, KernelSource request, byte[] binary) {
    runsRight(backend, request, binary, LOCAL);
  }

  /** Each kernel {@code i} of {@code binary}, loaded, launched at local size {@code local[i]}, adds its number. */
  static void runsRight(OpenClBackend backend, KernelSource request, byte[] binary, long[] local) {
    try (OpenClKernel kernels = (OpenClKernel) backend.load(binary, request.kernelNames())) {
      runsRight(kernels, local);
    }
  }

  /** Each kernel {@code i} of {@code kernels}, launched at local size {@code local[i]}, adds its number. */
  static void runsRight(OpenClKernel kernels, long[] local) {
    for (int i = 0; i < local.length; i++) {
      float[] y = new float[64];
      cl_mem buffer = clCreateBuffer(kernels.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, Sizeof.cl_float * 64L,
          Pointer.to(y), null);
      try {
        clSetKernelArg(kernels.kernel("k" + i), 0, Sizeof.cl_mem, Pointer.to(buffer));
        clEnqueueNDRangeKernel(kernels.queue(), kernels.kernel("k" + i), 1, null, new long[] {64},
            new long[] {local[i]}, 0, null, null);
        clFinish(kernels.queue());
        clEnqueueReadBuffer(kernels.queue(), buffer, CL_TRUE, 0, Sizeof.cl_float * 64L, Pointer.to(y), 0, null, null);
      } finally {
        clReleaseMemObject(buffer);
      }
      float[] want = new float[64];
      java.util.Arrays.fill(want, i + 1);
      assertArrayEquals(want, y, "k" + i);
    }
  }
}
