package org.mpibuild.opencl;

import static org.jocl.CL.CL_COMPLETE;
import static org.jocl.CL.CL_MEM_READ_WRITE;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clCreateCommandQueueWithProperties;
import static org.jocl.CL.clCreateUserEvent;
import static org.jocl.CL.clFinish;
import static org.jocl.CL.clReleaseCommandQueue;
import static org.jocl.CL.clReleaseEvent;
import static org.jocl.CL.clReleaseMemObject;
import static org.jocl.CL.clSetUserEventStatus;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadPoolExecutor;
import org.jocl.CL;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_event;
import org.jocl.cl_mem;
import org.jocl.cl_queue_properties;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/**
 * {@link HeldTransfers}: the progress thread's reads, gated writes and unmaps start no JOCL thread (JOCL 2.0.5 gave
 * each one a task on its reference-release pool, a thread blocked until the command ran), and a host buffer stays
 * held until its command has run.
 */
class HeldTransfersTest {
  @BeforeAll
  static void open() {
    QueueMessengerTest.open();
  }

  @AfterAll
  static void close() {
    QueueMessengerTest.close();
  }

  /** The tasks JOCL's reference-release pool has been given so far. */
  private static long joclTasks() throws ReflectiveOperationException {
    Field f = CL.class.getDeclaredField("referenceReleaseExecutor");
    f.setAccessible(true);
    return ((ThreadPoolExecutor) f.get(null)).getTaskCount();
  }

  @Test
  void theProgressThreadsOperationsGiveJoclsPoolNoTask() throws Exception {
    assertTrue(HeldTransfers.direct(), "JOCL's native transfer methods are found");
    long before = joclTasks();
    int rounds = 50;
    QueueMessengerTest.ranks(2, QueueMessengerTest.all(2, false), rank -> {
      List<CompletableFuture<Void>> pending = new ArrayList<>();
      int other = 1 - rank.comm.rank();
      for (int i = 0; i < rounds; i++) {
        rank.fill();
        pending.add(rank.messenger.sendAfter(rank.x, (long) QueueMessengerTest.N * Sizeof.cl_int, other, 1));
        pending.add(rank.messenger.receiveBefore(rank.y, (long) QueueMessengerTest.N * Sizeof.cl_int, other, 1));
        pending.add(rank.messenger.allreduceAfter(rank.x, QueueMessengerTest.N, Datatype.INT, ReduceOp.SUM));
      }
      pending.forEach(CompletableFuture::join);
      int[] sum = rank.read(rank.x);
      int[] received = rank.read(rank.y);
      for (int i = 0; i < QueueMessengerTest.N; i++) {
        assertEquals(3 * (i + 1), sum[i], "rank 0's (i + 1) and rank 1's 2 (i + 1)");
        assertEquals((other + 1) * (i + 1), received[i], "the other rank's filled values");
      }
    });
    assertEquals(0, joclTasks() - before, "tasks given to JOCL's reference-release pool");
  }

  @Test
  void aGatedWritesBufferIsHeldUntilTheWriteHasRun() {
    int[] err = new int[1];
    OpenClKernel ocl = QueueMessengerTest.ocl;
    cl_command_queue queue = clCreateCommandQueueWithProperties(ocl.context(), ocl.device(),
        new cl_queue_properties(), err);
    cl_mem buffer = clCreateBuffer(ocl.context(), CL_MEM_READ_WRITE, 4 * Sizeof.cl_int, null, err);
    HeldTransfers transfers = new HeldTransfers();
    try {
      ByteBuffer from = ByteBuffer.allocateDirect(4 * Sizeof.cl_int).order(ByteOrder.nativeOrder());
      from.asIntBuffer().put(new int[] {1, 2, 3, 4});
      cl_event gate = clCreateUserEvent(ocl.context(), err);
      cl_event write = new cl_event();
      QueueMessengerTest.check(transfers.write(queue, buffer, 4L * Sizeof.cl_int, from, gate, write));
      CL.clFlush(queue);
      assertEquals(1, transfers.holding());
      ByteBuffer into = ByteBuffer.allocateDirect(4 * Sizeof.cl_int).order(ByteOrder.nativeOrder());
      cl_event read = new cl_event();
      QueueMessengerTest.check(transfers.read(queue, buffer, 4L * Sizeof.cl_int, into, read));
      assertEquals(2, transfers.holding(), "the write behind its shut gate is still held, and the read too");
      clSetUserEventStatus(gate, CL_COMPLETE);
      clFinish(queue);
      int[] back = new int[4];
      into.asIntBuffer().get(back);
      assertArrayEquals(new int[] {1, 2, 3, 4}, back);
      cl_event again = new cl_event();
      QueueMessengerTest.check(transfers.read(queue, buffer, 4L * Sizeof.cl_int, into, again));
      clFinish(queue);
      assertEquals(1, transfers.holding(), "the next enqueue dropped the two that had run, and holds its own");
      for (cl_event e : new cl_event[] {gate, write, read, again}) {
        clReleaseEvent(e);
      }
    } finally {
      transfers.close();
      clReleaseMemObject(buffer);
      clReleaseCommandQueue(queue);
    }
  }
}
