package org.mpibuild.programs;

import static org.jocl.CL.CL_COMPLETE;
import static org.jocl.CL.CL_DEVICE_TYPE_ALL;
import static org.jocl.CL.CL_MEM_READ_WRITE;
import static org.jocl.CL.clBuildProgram;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clCreateCommandQueueWithProperties;
import static org.jocl.CL.clCreateContext;
import static org.jocl.CL.clCreateKernel;
import static org.jocl.CL.clCreateProgramWithSource;
import static org.jocl.CL.clCreateUserEvent;
import static org.jocl.CL.clEnqueueMarkerWithWaitList;
import static org.jocl.CL.clEnqueueNDRangeKernel;
import static org.jocl.CL.clFinish;
import static org.jocl.CL.clGetDeviceIDs;
import static org.jocl.CL.clGetPlatformIDs;
import static org.jocl.CL.clReleaseEvent;
import static org.jocl.CL.clSetEventCallback;
import static org.jocl.CL.clSetKernelArg;
import static org.jocl.CL.clSetUserEventStatus;

import java.util.Locale;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_device_id;
import org.jocl.cl_event;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.jocl.cl_platform_id;

/**
 * What a JOCL event callback costs the device's own work, for the benchmark ({@code make bench-allreduce}):
 * a chain of {@value #COMMANDS} tiny kernels on one in-order queue, held behind a user event while it is
 * enqueued, then released and timed to {@code clFinish}; once plain, once with an empty
 * {@code clSetEventCallback(CL_COMPLETE)} on every kernel. PoCL runs a callback on the worker thread that
 * finished the command, before it releases the next one, and JOCL attaches that thread to the JVM and
 * detaches it for each call; the difference per command is what every callback adds to the queue's critical
 * path.
 *
 * <pre>EventCallbackCost REPETITIONS</pre>
 *
 * Prints per repetition {@code CALLBACK rep=R plain_us=P callback_us=C} (microseconds per command), the two
 * modes' order alternating from one repetition to the next.
 */
public final class EventCallbackCost {
  static final int COMMANDS = 400;

  private EventCallbackCost() {}

  public static void main(String[] args) {
    int reps = Integer.parseInt(args[0]);
    CL.setExceptionsEnabled(true);
    cl_platform_id[] platform = new cl_platform_id[1];
    clGetPlatformIDs(1, platform, null);
    cl_device_id[] device = new cl_device_id[1];
    clGetDeviceIDs(platform[0], CL_DEVICE_TYPE_ALL, 1, device, null);
    cl_context context = clCreateContext(null, 1, device, null, null, null);
    cl_command_queue queue = clCreateCommandQueueWithProperties(context, device[0], null, null);
    org.jocl.cl_program program = clCreateProgramWithSource(context, 1,
        new String[] {"__kernel void bump(__global float* x) { x[get_global_id(0)] += 1.0f; }"}, null, null);
    clBuildProgram(program, 0, null, null, null, null);
    cl_kernel kernel = clCreateKernel(program, "bump", null);
    cl_mem x = clCreateBuffer(context, CL_MEM_READ_WRITE, 4096, null, null);
    clSetKernelArg(kernel, 0, Sizeof.cl_mem, Pointer.to(x));
    chain(context, queue, kernel, false); // warm-up: PoCL builds the kernel's work-group function at its first launch
    chain(context, queue, kernel, true);
    for (int rep = 0; rep < reps; rep++) {
      boolean callbackFirst = rep % 2 == 1;
      double first = chain(context, queue, kernel, callbackFirst);
      double second = chain(context, queue, kernel, !callbackFirst);
      double plain = callbackFirst ? second : first;
      double callback = callbackFirst ? first : second;
      System.out.printf(Locale.ROOT, "CALLBACK rep=%d plain_us=%.2f callback_us=%.2f%n", rep, plain, callback);
    }
  }

  /** Microseconds per command of a released chain of kernels, with or without a callback on each. */
  private static double chain(cl_context context, cl_command_queue queue, cl_kernel kernel, boolean callbacks) {
    cl_event hold = clCreateUserEvent(context, null);
    clEnqueueMarkerWithWaitList(queue, 1, new cl_event[] {hold}, null);
    cl_event[] events = new cl_event[COMMANDS];
    for (int i = 0; i < COMMANDS; i++) {
      events[i] = new cl_event();
      clEnqueueNDRangeKernel(queue, kernel, 1, null, new long[] {1024}, null, 0, null, events[i]);
      if (callbacks) {
        clSetEventCallback(events[i], CL_COMPLETE, (event, status, data) -> { }, null);
      }
    }
    long t0 = System.nanoTime();
    clSetUserEventStatus(hold, CL_COMPLETE);
    clFinish(queue);
    double us = (System.nanoTime() - t0) / 1e3 / COMMANDS;
    for (cl_event e : events) {
      clReleaseEvent(e);
    }
    clReleaseEvent(hold);
    return us;
  }
}
