package org.mpibuild.opencl;

import static org.jocl.CL.CL_MEM_COPY_HOST_PTR;
import static org.jocl.CL.CL_MEM_READ_ONLY;
import static org.jocl.CL.CL_MEM_WRITE_ONLY;
import static org.jocl.CL.CL_TRUE;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clEnqueueNDRangeKernel;
import static org.jocl.CL.clEnqueueReadBuffer;
import static org.jocl.CL.clReleaseMemObject;
import static org.jocl.CL.clSetKernelArg;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.mpibuild.BinaryData;
import org.mpibuild.CompileException;
import org.mpibuild.CorruptBinaryException;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;
import org.mpibuild.MpiBuild;

/** Local-mode builds on a real OpenCL device (PoCL on the CI machines). */
class OpenClLocalBuildTest {
  static final String ADD = "__kernel void add(__global const float* a, __global const float* b,"
      + " __global float* c) { int i = get_global_id(0); c[i] = a[i] + b[i] * SCALE; }\n"
      + "__kernel void unused(__global float* x) { x[0] = 1.0f; }\n";

  static MpiBuild mpiBuild;

  @BeforeAll
  static void open() {
    mpiBuild = MpiBuild.builder().local().build();
  }

  @AfterAll
  static void close() {
    mpiBuild.close();
  }

  @Test
  void localBuildCreatesRunnableKernels() {
    try (Kernel kernel = mpiBuild.mpiBuildKernel(KernelSource.of(ADD).withKernels("add").withOptions("-D SCALE=2.0f"), 0)) {
      assertEquals(1, mpiBuild.size());
      assertEquals(List.of("add"), kernel.kernelNames());
      assertEquals("opencl", kernel.backend());
      assertTrue(kernel.stats().compiled());
      assertEquals(0, kernel.stats().binaryBytes(), "local, without a cache: a plain build, no binary made");
      assertArrayEquals(new float[] {2f, 5f, 8f, 11f}, run(kernel.as(OpenClKernel.class)));
      assertTrue(kernel.binaryData().toBytes().length > 0, "a binary is made when asked for");
    }
  }

  @Test
  void noKernelNamesMeansEveryKernel() {
    try (Kernel kernel = mpiBuild.mpiBuildKernel(KernelSource.of(ADD).withOptions("-DSCALE=1"), 0)) {
      assertEquals(List.of("add", "unused"), kernel.kernelNames().stream().sorted().toList());
    }
  }

  @Test
  void binaryDataRoundTripLoadsAndRuns() {
    byte[] bytes;
    try (Kernel kernel = mpiBuild.mpiBuildKernel(KernelSource.of(ADD).withKernels("add").withOptions("-D SCALE=2.0f"), 0)) {
      bytes = kernel.binaryData().toBytes();
    }
    BinaryData data = BinaryData.fromBytes(bytes);
    assertEquals(List.of("add"), data.kernelNames());
    try (Kernel loaded = mpiBuild.buildKernelFromBinaryData(data)) {
      assertFalse(loaded.stats().compiled());
      assertArrayEquals(new float[] {2f, 5f, 8f, 11f}, run(loaded.as(OpenClKernel.class)));
    }
    bytes[bytes.length - 1] ^= 1;
    CorruptBinaryException e = assertThrows(CorruptBinaryException.class, () -> BinaryData.fromBytes(bytes));
    assertTrue(e.getMessage().contains("SHA-256"), e.getMessage());
  }

  @Test
  void compileErrorCarriesTheBuildLog() {
    CompileException e = assertThrows(CompileException.class,
        () -> mpiBuild.mpiBuildKernel("__kernel void broken(__global float* x) { x[0] = undefined_name; }", 0));
    assertTrue(e.buildLog().contains("undefined_name"), e.buildLog());
    assertTrue(e.getMessage().contains("CL_BUILD_PROGRAM_FAILURE"), e.getMessage());
  }

  @Test
  void unknownKernelNameIsNamed() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> mpiBuild.mpiBuildKernel(KernelSource.of(ADD).withKernels("nope").withOptions("-DSCALE=1"), 0));
    assertTrue(e.getMessage().contains("'nope'") && e.getMessage().contains("add"), e.getMessage());
  }

  @Test
  void invalidOptionIsNamed() {
    RuntimeException e = assertThrows(RuntimeException.class,
        () -> mpiBuild.mpiBuildKernel(KernelSource.of(ADD).withOptions("-DSCALE=1 --no-such-option"), 0));
    assertTrue(e.getMessage().contains("--no-such-option"), e.getMessage());
  }

  @Test
  void namedLaunchShapesTravelInTheBinary() {
    KernelSource request = KernelSource.of(ADD).withKernels("add").withOptions("-D SCALE=2.0f");
    String spec = "4-1-1-goffs0-smallgrid";
    try (Kernel plain = mpiBuild.mpiBuildKernel(request, 0);
        Kernel shaped = mpiBuild.mpiBuildKernel(request.withLaunchShapes(LaunchShape.of("add", 4)), 0)) {
      assertFalse(contains(plain.binaryData().toBytes(), spec), "a binary read before any launch has no " + spec);
      assertTrue(contains(shaped.binaryData().toBytes(), spec), "the shaped binary lacks " + spec);
      assertArrayEquals(new float[] {2f, 5f, 8f, 11f}, run(shaped.as(OpenClKernel.class)));
    }
  }

  /**
   * Alone (local mode), a shaped request's kernels are built in this process, as a rank that compiles for
   * itself builds them, and the finished binary is made in the background for the cache: it holds the named
   * function, the next job finds it, and with no cache none is made until asked for.
   */
  @Test
  void aloneTheKernelIsBuiltHereAndTheFinishedBinaryFillsTheCache(@org.junit.jupiter.api.io.TempDir java.nio.file.Path cache) {
    KernelSource request = KernelSource.of(ADD).withKernels("add").withOptions("-D SCALE=2.0f -D ALONE=1")
        .withLaunchShapes(LaunchShape.of("add", 4));
    String spec = "4-1-1-goffs0-smallgrid";
    try (MpiBuild b = MpiBuild.builder().local().cacheDirectory(cache).build()) {
      Kernel k = b.mpiBuildKernel(request, 0);
      assertTrue(k.stats().compiled());
      assertEquals(0, k.stats().binaryBytes(), "the kernel was ready before its binary");
      assertArrayEquals(new float[] {2f, 5f, 8f, 11f}, run(k.as(OpenClKernel.class)));
      byte[] binary = k.binaryData().toBytes(); // waits for the binary
      assertTrue(contains(binary, spec), "the finished binary lacks " + spec);
      assertFalse(contains(binary, "0-0-0"), "the finished binary holds a generic function");
    }
    try (MpiBuild b = MpiBuild.builder().local().cacheDirectory(cache).build(); Kernel k = b.mpiBuildKernel(request, 0)) {
      assertTrue(k.stats().cacheHit(), "the next job finds the binary the first one made");
      assertArrayEquals(new float[] {2f, 5f, 8f, 11f}, run(k.as(OpenClKernel.class)));
    }
    try (MpiBuild b = MpiBuild.builder().local().noCache().build(); Kernel k = b.mpiBuildKernel(request, 0)) {
      assertEquals(0, k.stats().binaryBytes());
      assertArrayEquals(new float[] {2f, 5f, 8f, 11f}, run(k.as(OpenClKernel.class)));
      assertTrue(contains(k.binaryData().toBytes(), spec), "a binary made when asked for is the finished one");
    }
  }

  @Test
  void compileErrorsAndBadOptionsReachTheCallerFromTheShapedCompile() {
    LaunchShape shape = LaunchShape.of("broken", 4);
    CompileException e = assertThrows(CompileException.class, () -> mpiBuild.mpiBuildKernel(
        KernelSource.of("__kernel void broken(__global float* x) { x[0] = undefined_name; }").withLaunchShapes(shape), 0));
    assertTrue(e.buildLog().contains("undefined_name"), e.buildLog());
    assertTrue(e.getMessage().contains("CL_BUILD_PROGRAM_FAILURE"), e.getMessage());
    RuntimeException bad = assertThrows(RuntimeException.class, () -> mpiBuild.mpiBuildKernel(KernelSource.of(ADD)
        .withOptions("-DSCALE=1 --no-such-option").withLaunchShapes(LaunchShape.of("add", 4)), 0));
    assertTrue(bad.getMessage().contains("--no-such-option"), bad.getMessage());
  }

  @Test
  void aShapeForAKernelTheSourceLacksIsNamed() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> mpiBuild.mpiBuildKernel(
        KernelSource.of(ADD).withOptions("-DSCALE=1").withLaunchShapes(LaunchShape.of("ad", 4)), 0));
    assertTrue(e.getMessage().contains("'ad 4'") && e.getMessage().contains("add"), e.getMessage());
  }

  static boolean contains(byte[] haystack, String needle) {
    return new String(haystack, java.nio.charset.StandardCharsets.ISO_8859_1).contains(needle);
  }

  @Test
  void badInputIsRefusedWithTheValue() {
    assertTrue(assertThrows(IllegalArgumentException.class, () -> mpiBuild.mpiBuildKernel("  ", 0))
        .getMessage().contains("empty"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> mpiBuild.mpiBuildKernel((String) null, 0))
        .getMessage().contains("null"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> mpiBuild.mpiBuildKernel(ADD, 3))
        .getMessage().contains("root 3"));
  }

  @Test
  void kernelsWithShapesOfTheirOwnRunAtEveryShapeOfTheRequest() {
    // add names 4, unused names 2: the binary holds those two functions and no other (no generic code, no add
    // at 2); add's launch at 2 is generated from the program's bitcode, and computes the same.
    KernelSource request = KernelSource.of(ADD).withOptions("-D SCALE=2.0f")
        .withLaunchShapes(LaunchShape.of("add", 4), LaunchShape.of("unused", 2));
    try (Kernel kernel = mpiBuild.mpiBuildKernel(request, 0)) {
      byte[] binary = kernel.binaryData().toBytes();
      assertTrue(contains(binary, "/add/4-1-1-goffs0-smallgrid/") && contains(binary, "/unused/2-1-1-goffs0-smallgrid/"));
      assertFalse(contains(binary, "/add/2-1-1-goffs0-smallgrid/") || contains(binary, "/unused/4-1-1-goffs0-smallgrid/")
          || contains(binary, "/0-0-0/"), "a function nobody named travelled");
      assertArrayEquals(new float[] {2f, 5f, 8f, 11f}, run(kernel.as(OpenClKernel.class), 4));
      assertArrayEquals(new float[] {2f, 5f, 8f, 11f}, run(kernel.as(OpenClKernel.class), 2));
    }
  }

  static float[] run(OpenClKernel k) {
    return run(k, 0);
  }

  /** Runs add on 4 elements with the given local size (0: the driver's choice). */
  static float[] run(OpenClKernel k, long localSize) {
    float[] a = {0, 1, 2, 3};
    float[] b = {1, 2, 3, 4};
    float[] c = new float[4];
    cl_mem ma = clCreateBuffer(k.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, Sizeof.cl_float * 4L, Pointer.to(a), null);
    cl_mem mb = clCreateBuffer(k.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, Sizeof.cl_float * 4L, Pointer.to(b), null);
    cl_mem mc = clCreateBuffer(k.context(), CL_MEM_WRITE_ONLY, Sizeof.cl_float * 4L, null, null);
    try {
      cl_kernel add = k.kernel("add");
      clSetKernelArg(add, 0, Sizeof.cl_mem, Pointer.to(ma));
      clSetKernelArg(add, 1, Sizeof.cl_mem, Pointer.to(mb));
      clSetKernelArg(add, 2, Sizeof.cl_mem, Pointer.to(mc));
      clEnqueueNDRangeKernel(k.queue(), add, 1, null, new long[] {4}, localSize == 0 ? null : new long[] {localSize}, 0,
          null, null);
      clEnqueueReadBuffer(k.queue(), mc, CL_TRUE, 0, Sizeof.cl_float * 4L, Pointer.to(c), 0, null, null);
      return c;
    } finally {
      clReleaseMemObject(ma);
      clReleaseMemObject(mb);
      clReleaseMemObject(mc);
    }
  }
}
