package org.mpibuild.opencl;

import static org.jocl.CL.CL_MEM_READ_WRITE;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clReleaseMemObject;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jocl.cl_mem;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * Kernels, queues and messengers used after their MpiBuild or themselves closed, on a real OpenCL device
 * (PoCL): each call throws, naming what was closed and why, and no released handle reaches the driver.
 */
class OpenClAfterCloseTest {
  static final KernelSource SAXPY = KernelSource.of("__kernel void saxpy(__global float* y, float a) {"
      + " int i = get_global_id(0); y[i] = a * y[i]; }").withKernels("saxpy");

  static void throwsSaying(String message, Executable call) {
    assertEquals(message, assertThrows(IllegalStateException.class, call).getMessage());
  }

  @Test
  void afterItsMpiBuildClosedTheKernelHandsOutNoHandleAndItsMessengerEnqueuesNothing() {
    MpiBuild mpiBuild = MpiBuild.builder().local().build();
    Kernel kernel = mpiBuild.mpiBuildKernel(SAXPY, 0);
    OpenClKernel ocl = kernel.as(OpenClKernel.class);
    cl_mem buffer = clCreateBuffer(ocl.context(), CL_MEM_READ_WRITE, 64, null, null);
    QueueMessenger messenger = QueueMessenger.open(new InProcessCommunicator.World(1, 10_000).rank(0), ocl.queue());
    try {
      mpiBuild.close();
      String closed = "kernel saxpy: its MpiBuild was closed";
      throwsSaying(closed, ocl::queue); // the handle that crashed clEnqueueNDRangeKernel
      throwsSaying(closed, () -> ocl.kernel("saxpy"));
      throwsSaying(closed, ocl::kernel);
      throwsSaying(closed, ocl::context);
      throwsSaying(closed, ocl::device);
      throwsSaying(closed, ocl::program);
      throwsSaying(closed, () -> kernel.as(OpenClKernel.class));
      throwsSaying(closed, kernel::binaryData);
      IllegalStateException e = assertThrows(IllegalStateException.class, () -> messenger.sendAfter(buffer, 64, 0, 0));
      assertTrue(e.getMessage().startsWith("messenger on queue ") && e.getMessage().endsWith(": its MpiBuild was closed"),
          e.getMessage());
      e = assertThrows(IllegalStateException.class, () -> messenger.receiveBefore(buffer, 64, 0, 0));
      assertTrue(e.getMessage().endsWith(": its MpiBuild was closed"), e.getMessage());
      kernel.close(); // closed with its MpiBuild: nothing to release twice
      kernel.close();
      messenger.close();
      assertEquals(List.of("saxpy"), kernel.kernelNames());
    } finally {
      clReleaseMemObject(buffer);
    }
  }

  @Test
  void aKernelAndAMessengerClosedByThemselvesSaySoWhileTheMpiBuildGoesOn() {
    try (MpiBuild mpiBuild = MpiBuild.builder().local().build()) {
      Kernel kernel = mpiBuild.mpiBuildKernel(SAXPY, 0);
      OpenClKernel ocl = kernel.as(OpenClKernel.class);
      QueueMessenger messenger = QueueMessenger.open(new InProcessCommunicator.World(1, 10_000).rank(0), ocl.queue());
      cl_mem buffer = clCreateBuffer(ocl.context(), CL_MEM_READ_WRITE, 64, null, null);
      try {
        kernel.close();
        kernel.close();
        throwsSaying("kernel saxpy: it was closed", ocl::queue);
        throwsSaying("kernel saxpy: it was closed", () -> ocl.kernel("saxpy"));
        messenger.close();
        messenger.close();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> messenger.sendAfter(buffer, 64, 0, 0));
        assertTrue(e.getMessage().endsWith(": it was closed"), e.getMessage());
      } finally {
        clReleaseMemObject(buffer);
      }
      try (Kernel again = mpiBuild.mpiBuildKernel(SAXPY, 0)) {
        assertEquals(List.of("saxpy"), again.as(OpenClKernel.class).kernelNames());
        again.as(OpenClKernel.class).queue();
      }
    }
  }
}
