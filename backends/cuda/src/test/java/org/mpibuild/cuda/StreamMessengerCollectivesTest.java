package org.mpibuild.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUstream;
import org.junit.jupiter.api.Test;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * The CUDA messenger's collectives without a GPU: arguments are checked and a closed messenger refuses,
 * before any CUDA call (the handles here are empty, so a CUDA call would fail or crash). The engine behind
 * them is the one {@code StreamOrderedCollectivesTest} runs at 2 to 4 ranks; the stream half runs on a GPU in
 * {@code StreamIT} and {@code scripts/gpu-check} ({@code CudaStreams}).
 */
class StreamMessengerCollectivesTest {
  @Test
  void badArgumentsAreRefusedBeforeAnyCudaCall() {
    try (StreamMessenger m = StreamMessenger.open(new InProcessCommunicator.World(2, 10_000).rank(0), new CUcontext(),
        new CUstream(), Duration.ofSeconds(5))) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> m.bcastAfter(new CUdeviceptr(), 64, 2));
      assertTrue(e.getMessage().contains("rank 2 is out of range"), e.getMessage());
      e = assertThrows(IllegalArgumentException.class, () -> m.bcastAfter(new CUdeviceptr(), 0, 0));
      assertTrue(e.getMessage().contains("message size 0"), e.getMessage());
      e = assertThrows(IllegalArgumentException.class,
          () -> m.allreduceAfter(new CUdeviceptr(), 0, Datatype.FLOAT, ReduceOp.SUM));
      assertTrue(e.getMessage().contains("count 0"), e.getMessage());
      e = assertThrows(IllegalArgumentException.class,
          () -> m.allreduceAfter(new CUdeviceptr(), Integer.MAX_VALUE, Datatype.DOUBLE, ReduceOp.MAX));
      assertTrue(e.getMessage().contains("must be between 1 and"), e.getMessage());
    }
  }

  @Test
  void aClosedMessengerRefusesCollectivesWithoutACudaCall() {
    StreamMessenger m = StreamMessenger.open(new InProcessCommunicator.World(1, 10_000).rank(0), new CUcontext(),
        new CUstream());
    m.close();
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> m.bcastAfter(new CUdeviceptr(), 64, 0));
    assertTrue(e.getMessage().endsWith(": it was closed"), e.getMessage());
    e = assertThrows(IllegalStateException.class,
        () -> m.allreduceAfter(new CUdeviceptr(), 16, Datatype.INT, ReduceOp.MIN));
    assertTrue(e.getMessage().endsWith(": it was closed"), e.getMessage());
  }
}
