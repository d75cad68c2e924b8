package org.mpibuild.bench;

import static org.jocl.CL.CL_DEVICE_TYPE_ALL;
import static org.jocl.CL.CL_PROGRAM_BINARIES;
import static org.jocl.CL.CL_PROGRAM_BINARY_SIZES;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.clBuildProgram;
import static org.jocl.CL.clCreateCommandQueueWithProperties;
import static org.jocl.CL.clCreateContext;
import static org.jocl.CL.clCreateKernel;
import static org.jocl.CL.clCreateProgramWithBinary;
import static org.jocl.CL.clCreateProgramWithSource;
import static org.jocl.CL.clGetDeviceIDs;
import static org.jocl.CL.clGetPlatformIDs;
import static org.jocl.CL.clGetProgramInfo;
import static org.jocl.CL.clReleaseCommandQueue;
import static org.jocl.CL.clReleaseContext;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_device_id;
import org.jocl.cl_kernel;
import org.jocl.cl_platform_id;
import org.jocl.cl_program;
import org.jocl.cl_queue_properties;

/**
 * OpenCL through JOCL directly, one step per call, so that the benchmark can time each step on its own:
 * opening a context (set-up), {@code clCreateProgramWithSource} + {@code clBuildProgram} (the compile: with
 * PoCL only the front end, since PoCL makes machine code lazily), reading {@code CL_PROGRAM_BINARIES} (with
 * PoCL: the generic machine code of every kernel, made at that moment), and loading a binary. The first
 * platform with a device, its first device, as the OpenCL backend picks by default. JOCL's native library
 * must already be loaded (the benchmark opens the OpenCL backend first).
 */
final class Ocl implements AutoCloseable {
  final cl_device_id device;
  final cl_context context;
  final cl_command_queue queue;
  private final List<cl_program> programs = new ArrayList<>();
  private final List<cl_kernel> kernels = new ArrayList<>();

  private Ocl(cl_device_id device, cl_context context, cl_command_queue queue) {
    this.device = device;
    this.context = context;
    this.queue = queue;
  }

  /** A context and an in-order queue on the first device of the first platform that has one. */
  static Ocl open() {
    int[] n = new int[1];
    check(clGetPlatformIDs(0, null, n), "clGetPlatformIDs");
    cl_platform_id[] platforms = new cl_platform_id[n[0]];
    check(clGetPlatformIDs(platforms.length, platforms, null), "clGetPlatformIDs");
    for (cl_platform_id p : platforms) {
      int[] d = new int[1];
      if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, null, d) != CL_SUCCESS || d[0] == 0) {
        continue;
      }
      cl_device_id[] devices = new cl_device_id[d[0]];
      check(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, devices.length, devices, null), "clGetDeviceIDs");
      int[] err = new int[1];
      cl_context context = clCreateContext(null, 1, new cl_device_id[] {devices[0]}, null, null, err);
      check(err[0], "clCreateContext");
      cl_command_queue queue = clCreateCommandQueueWithProperties(context, devices[0], new cl_queue_properties(), err);
      check(err[0], "clCreateCommandQueueWithProperties");
      return new Ocl(devices[0], context, queue);
    }
    throw new IllegalStateException("no OpenCL device");
  }

  /** {@code clCreateProgramWithSource} and {@code clBuildProgram}: nothing more. */
  cl_program build(String source, String options) {
    int[] err = new int[1];
    cl_program p = clCreateProgramWithSource(context, 1, new String[] {source}, null, err);
    check(err[0], "clCreateProgramWithSource");
    programs.add(p);
    check(clBuildProgram(p, 1, new cl_device_id[] {device}, options, null, null), "clBuildProgram");
    return p;
  }

  /** Reads the program binary: with PoCL this makes the generic machine code of every kernel first. */
  static byte[] binary(cl_program program) {
    long[] sizes = new long[1];
    check(clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, Sizeof.size_t, Pointer.to(sizes), null),
        "CL_PROGRAM_BINARY_SIZES");
    byte[] b = new byte[(int) sizes[0]];
    check(clGetProgramInfo(program, CL_PROGRAM_BINARIES, Sizeof.POINTER, Pointer.to(Pointer.to(b)), null),
        "CL_PROGRAM_BINARIES");
    return b;
  }

  /** {@code clCreateProgramWithBinary} and {@code clBuildProgram}. */
  cl_program load(byte[] binary) {
    int[] err = new int[1];
    int[] status = new int[1];
    cl_program p = clCreateProgramWithBinary(context, 1, new cl_device_id[] {device}, new long[] {binary.length},
        new byte[][] {binary}, status, err);
    check(err[0], "clCreateProgramWithBinary");
    programs.add(p);
    check(clBuildProgram(p, 1, new cl_device_id[] {device}, "", null, null), "clBuildProgram (binary)");
    return p;
  }

  /** The named kernels of {@code program}, in order. */
  Map<String, cl_kernel> kernels(cl_program program, List<String> names) {
    Map<String, cl_kernel> out = new LinkedHashMap<>();
    int[] err = new int[1];
    for (String name : names) {
      cl_kernel k = clCreateKernel(program, name, err);
      check(err[0], "clCreateKernel(" + name + ")");
      kernels.add(k);
      out.put(name, k);
    }
    return out;
  }

  @Override
  public void close() {
    kernels.forEach(CL::clReleaseKernel);
    programs.forEach(CL::clReleaseProgram);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }

  static void check(int rc, String what) {
    if (rc != CL_SUCCESS) {
      throw new IllegalStateException(what + ": " + CL.stringFor_errorCode(rc));
    }
  }
}
