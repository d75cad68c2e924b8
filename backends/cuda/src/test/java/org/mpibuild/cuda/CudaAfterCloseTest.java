package org.mpibuild.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.mpibuild.spi.UseGuard;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * CUDA kernels and messengers used after close, without a GPU: each call throws, naming what was closed
 * and why, before any CUDA call (here, one would throw UnsatisfiedLinkError: there is no driver).
 */
class CudaAfterCloseTest {
  static void throwsSaying(String message, Executable call) {
    assertEquals(message, assertThrows(IllegalStateException.class, call).getMessage());
  }

  @Test
  void aKernelClosedWithItsBackendIsUnloadedOnceAndNeverLaunches() {
    UseGuard backend = new UseGuard("CUDA context");
    AtomicInteger unloads = new AtomicInteger();
    CudaKernel kernel = new CudaKernel(new CUcontext(), new CUmodule(), Map.of("saxpy", new CUfunction()), backend,
        unloads::incrementAndGet);
    backend.close("its MpiBuild was closed"); // what CudaBackend.close() does before it releases the context
    assertEquals(1, unloads.get());
    String closed = "kernel saxpy: its MpiBuild was closed";
    throwsSaying(closed, () -> kernel.launch("saxpy", new int[] {1, 1, 1}, new int[] {32, 1, 1}, 0, null, 2.0f,
        new CUdeviceptr(), new CUdeviceptr(), 32));
    throwsSaying(closed, () -> kernel.function("saxpy"));
    throwsSaying(closed, kernel::function);
    throwsSaying(closed, kernel::context);
    throwsSaying(closed, kernel::module);
    kernel.close();
    kernel.close();
    assertEquals(1, unloads.get(), "unloaded exactly once");
  }

  @Test
  void aKernelClosedByItselfLeavesItsBackendAndSaysSo() {
    UseGuard backend = new UseGuard("CUDA context");
    AtomicInteger unloads = new AtomicInteger();
    CudaKernel kernel = new CudaKernel(new CUcontext(), new CUmodule(), Map.of("saxpy", new CUfunction()), backend,
        unloads::incrementAndGet);
    kernel.close();
    throwsSaying("kernel saxpy: it was closed", kernel::function);
    backend.close("its MpiBuild was closed");
    assertEquals(1, unloads.get());
  }

  @Test
  void aClosedMessengerMakesNoCudaCall() {
    StreamMessenger messenger = StreamMessenger.open(new InProcessCommunicator.World(1, 10_000).rank(0), new CUcontext(), new CUstream());
    messenger.close();
    messenger.close();
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> messenger.sendAfter(new CUdeviceptr(), 64, 0, 0));
    assertTrue(e.getMessage().startsWith("messenger on stream ") && e.getMessage().endsWith(": it was closed"),
        e.getMessage());
    e = assertThrows(IllegalStateException.class, () -> messenger.receiveBefore(new CUdeviceptr(), 64, 0, 0));
    assertTrue(e.getMessage().endsWith(": it was closed"), e.getMessage());
  }

  @Test
  void aLaunchOfAFunctionChecksGridBlockAndArgumentsBeforeAnyDriverCall() {
    IllegalArgumentException grid = assertThrows(IllegalArgumentException.class,
        () -> CudaKernel.launchFunction(new CUfunction(), "saxpy", new int[] {1, 1}, new int[] {32, 1, 1}, 0, null));
    assertEquals("grid and block need 3 values each, got 2 and 3", grid.getMessage());
    IllegalArgumentException argument = assertThrows(IllegalArgumentException.class,
        () -> CudaKernel.launchFunction(new CUfunction(), "saxpy", new int[] {1, 1, 1}, new int[] {32, 1, 1}, 0, null,
            2.0f, "x"));
    assertTrue(argument.getMessage().startsWith("kernel argument 1 is a java.lang.String"), argument.getMessage());
  }
}
