package org.mpibuild.opencl;

import static org.jocl.CL.CL_COMPLETE;
import static org.jocl.CL.CL_EVENT_COMMAND_EXECUTION_STATUS;
import static org.jocl.CL.CL_MEM_READ_WRITE;
import static org.jocl.CL.CL_TRUE;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clCreateCommandQueueWithProperties;
import static org.jocl.CL.clCreateUserEvent;
import static org.jocl.CL.clEnqueueMarkerWithWaitList;
import static org.jocl.CL.clEnqueueNDRangeKernel;
import static org.jocl.CL.clEnqueueReadBuffer;
import static org.jocl.CL.clFinish;
import static org.jocl.CL.clFlush;
import static org.jocl.CL.clGetEventInfo;
import static org.jocl.CL.clReleaseCommandQueue;
import static org.jocl.CL.clReleaseEvent;
import static org.jocl.CL.clReleaseMemObject;
import static org.jocl.CL.clSetKernelArg;
import static org.jocl.CL.clSetUserEventStatus;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_event;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.jocl.cl_queue_properties;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;
import org.mpibuild.streams.StreamOrderedMessages;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * {@link QueueMessenger}'s collectives on real PoCL queues, ranks in one JVM (one queue each, one context).
 * Surefire runs this class twice: on Java 17, where collectives run on the progress thread, and on the FFM
 * binding's JDK with native access, where they run on the queue itself ({@code NativeQueueCommands}); a rank
 * can also be put on the progress thread with {@code mpibuild.opencl.onQueue=false}, so that the two ways meet.
 */
class QueueMessengerTest {
  static final KernelSource SOURCE = KernelSource.of(String.join("\n",
      "__kernel void fill(__global int* x, const int rank) { int i = get_global_id(0); x[i] = (rank + 1) * (i + 1); }",
      "__kernel void twice(__global const int* x, __global int* y) { int i = get_global_id(0); y[i] = 2 * x[i]; }",
      "")).withKernels("fill", "twice");
  static final int N = 256;

  static MpiBuild build;
  static Kernel kernel;
  static OpenClKernel ocl;

  @BeforeAll
  static void open() {
    build = MpiBuild.builder().local().build();
    kernel = build.mpiBuildKernel(SOURCE, 0);
    ocl = kernel.as(OpenClKernel.class);
  }

  @AfterAll
  static void close() {
    build.close();
  }

  static void check(int rc) {
    assertEquals(org.jocl.CL.CL_SUCCESS, rc, () -> org.jocl.CL.stringFor_errorCode(rc));
  }

  /** One rank: its own queue, messenger and buffers. */
  static final class Rank implements AutoCloseable {
    final Communicator comm;
    final cl_command_queue queue;
    final QueueMessenger messenger;
    final cl_mem x;
    final cl_mem y;
    final cl_kernel fill;
    final cl_kernel twice;

    Rank(Communicator comm, boolean onQueue) {
      this(comm, onQueue, StreamOrderedMessages.DEFAULT_DEADLINE);
    }

    Rank(Communicator comm, boolean onQueue, Duration deadline) {
      this.comm = comm;
      int[] err = new int[1];
      queue = clCreateCommandQueueWithProperties(ocl.context(), ocl.device(), new cl_queue_properties(), err);
      synchronized (QueueMessengerTest.class) { // the setting is read when the messenger opens
        System.setProperty("mpibuild.opencl.onQueue", Boolean.toString(onQueue));
        try {
          messenger = QueueMessenger.open(comm, queue, deadline);
        } finally {
          System.clearProperty("mpibuild.opencl.onQueue");
        }
      }
      x = clCreateBuffer(ocl.context(), CL_MEM_READ_WRITE, (long) N * Sizeof.cl_int, null, err);
      y = clCreateBuffer(ocl.context(), CL_MEM_READ_WRITE, (long) N * Sizeof.cl_int, null, err);
      // kernels are not thread-safe for arguments: each rank its own
      fill = org.jocl.CL.clCreateKernel(ocl.program(), "fill", err);
      twice = org.jocl.CL.clCreateKernel(ocl.program(), "twice", err);
    }

    void fill() {
      clSetKernelArg(fill, 0, Sizeof.cl_mem, Pointer.to(x));
      clSetKernelArg(fill, 1, Sizeof.cl_int, Pointer.to(new int[] {comm.rank()}));
      check(clEnqueueNDRangeKernel(queue, fill, 1, null, new long[] {N}, null,
          0, null, null));
    }

    void twice() {
      clSetKernelArg(twice, 0, Sizeof.cl_mem, Pointer.to(x));
      clSetKernelArg(twice, 1, Sizeof.cl_mem, Pointer.to(y));
      check(clEnqueueNDRangeKernel(queue, twice, 1, null, new long[] {N},
          null, 0, null, null));
    }

    int[] read(cl_mem buffer) {
      int[] out = new int[N];
      clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, (long) N * Sizeof.cl_int, Pointer.to(out), 0, null, null);
      return out;
    }

    @Override
    public void close() {
      messenger.close();
      clFinish(queue);
      clReleaseMemObject(x);
      clReleaseMemObject(y);
      org.jocl.CL.clReleaseKernel(fill);
      org.jocl.CL.clReleaseKernel(twice);
      clReleaseCommandQueue(queue);
    }
  }

  interface RankBody {
    void run(Rank rank) throws Exception;
  }

  /** Runs every rank on its own thread; rank r runs its operations on its queue where {@code onQueue[r]}. */
  static void ranks(int n, boolean[] onQueue, RankBody body) throws Exception {
    StreamOrderedCollectivesTest.ranks(n, comm -> {
      try (Rank rank = new Rank(comm, onQueue[comm.rank()])) {
        body.run(rank);
      }
    });
  }

  static boolean[] all(int n, boolean onQueue) {
    boolean[] b = new boolean[n];
    java.util.Arrays.fill(b, onQueue);
    return b;
  }

  @Test
  void theMessengerSaysWhereItsCollectivesRun() throws Exception {
    ranks(1, all(1, true), rank -> {
      String where = rank.messenger.operationsRun();
      if (Runtime.version().feature() < 22) {
        assertTrue(where.startsWith("on the progress thread: Java " + Runtime.version().feature()), where);
      } else {
        assertEquals("on the device's queue (native kernels through the FFM API)", where,
            "PoCL's CPU device runs native kernels; surefire runs this JDK with native access");
      }
    });
    ranks(1, all(1, false), rank -> assertEquals("on the progress thread: MPI_BUILD_OPENCL_ON_QUEUE is false",
        rank.messenger.operationsRun()));
  }

  /**
   * A collective on the queue holds one of the device's threads while it waits for the other ranks: at most the
   * device's threads less one messengers of a process run collectives on their queues, so that one thread stays
   * free for the rest of the queues' work (without it, in-process ranks deadlocked here: all the threads waited
   * in collectives for a rank whose queue had no thread left). The others use their progress threads.
   */
  @Test
  void atMostTheDevicesThreadsLessOneMessengersRunCollectivesOnTheirQueues() {
    int[] units = new int[1];
    org.jocl.CL.clGetDeviceInfo(ocl.device(), org.jocl.CL.CL_DEVICE_MAX_COMPUTE_UNITS, Sizeof.cl_uint,
        Pointer.to(units), null);
    InProcessCommunicator.World world = new InProcessCommunicator.World(1, 30_000);
    List<Rank> opened = new ArrayList<>();
    try {
      for (int i = 0; i < units[0] + 1; i++) {
        opened.add(new Rank(world.rank(0), true));
      }
      long onQueue = opened.stream().filter(r -> r.messenger.operationsRun().startsWith("on the device's queue"))
          .count();
      if (Runtime.version().feature() < 22) {
        assertEquals(0, onQueue);
        return;
      }
      assertEquals(units[0] - 1, onQueue, "device threads: " + units[0]);
      assertEquals("on the progress thread: " + (units[0] - 1) + " messenger(s) of this process already run "
          + "collectives on queues of this device, which runs them on " + units[0] + " thread(s); one must stay free "
          + "for the queues' other work", opened.get(units[0]).messenger.operationsRun());
      opened.remove(0).close(); // gives its thread back
      Rank again = new Rank(world.rank(0), true);
      opened.add(again);
      assertTrue(again.messenger.operationsRun().startsWith("on the device's queue"), again.messenger.operationsRun());
    } finally {
      opened.forEach(Rank::close);
    }
  }

  /**
   * fill, all-reduce, twice, enqueued without waiting, on every rank, with the last rank's queue held back by a
   * user event before its fill: a marker enqueued after the all-reduce on the other ranks must not complete
   * while it is held (MPICH #7612's defect), and twice must read the sums.
   */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void kernelsAroundAnAllReduceSeeTheSumsAndNothingAfterItRunsEarly(int n) throws Exception {
    boolean[] mixed = new boolean[n];
    for (int r = 0; r < n; r++) {
      mixed[r] = r != 1; // rank 1 on its progress thread: the two ways meet in one collective
    }
    CompletableFuture<Void> markersChecked = new CompletableFuture<>();
    List<Integer> checked = new ArrayList<>();
    ranks(n, mixed, rank -> {
      int r = rank.comm.rank();
      int[] err = new int[1];
      cl_event hold = clCreateUserEvent(ocl.context(), err);
      if (r == n - 1) {
        cl_event marker = new cl_event();
        clEnqueueMarkerWithWaitList(rank.queue, 1, new cl_event[] {hold}, marker);
        clReleaseEvent(marker);
      }
      rank.fill();
      CompletableFuture<Void> f = rank.messenger.allreduceAfter(rank.x, N, Datatype.INT, ReduceOp.SUM);
      cl_event after = new cl_event();
      clEnqueueMarkerWithWaitList(rank.queue, 0, null, after);
      rank.twice();
      clFlush(rank.queue);
      if (r == n - 1) {
        markersChecked.get(30, TimeUnit.SECONDS);
        clSetUserEventStatus(hold, CL_COMPLETE);
      } else {
        Thread.sleep(150);
        int[] status = new int[1];
        clGetEventInfo(after, CL_EVENT_COMMAND_EXECUTION_STATUS, Sizeof.cl_int, Pointer.to(status), null);
        assertNotEquals(CL_COMPLETE, status[0], "rank " + r + ": the marker after the all-reduce completed while rank "
            + (n - 1) + "'s queue was held before its input");
        assertFalse(f.isDone());
        synchronized (checked) {
          checked.add(r);
          if (checked.size() == n - 1) {
            markersChecked.complete(null);
          }
        }
      }
      f.get(30, TimeUnit.SECONDS);
      int[] y = rank.read(rank.y);
      for (int i = 0; i < N; i++) {
        assertEquals(2 * (n * (n + 1) / 2) * (i + 1), y[i], "rank " + r + ", element " + i);
      }
      clReleaseEvent(after);
      clReleaseEvent(hold);
    });
  }

  @ParameterizedTest
  @ValueSource(ints = {2, 3})
  void aBroadcastBetweenKernelsReachesEveryRank(int n) throws Exception {
    boolean[] mixed = new boolean[n];
    for (int r = 0; r < n; r++) {
      mixed[r] = r % 2 == 0;
    }
    ranks(n, mixed, rank -> {
      rank.fill();
      CompletableFuture<Void> f = rank.messenger.bcastAfter(rank.x, (long) N * Sizeof.cl_int, n - 1);
      rank.twice();
      f.get(30, TimeUnit.SECONDS);
      int[] y = rank.read(rank.y);
      for (int i = 0; i < N; i++) {
        assertEquals(2 * n * (i + 1), y[i], "rank " + rank.comm.rank() + ", element " + i);
      }
    });
  }

  /** A collective larger than one rank's buffer fails on every rank with one message; no buffer changes. */
  @Test
  void anAllReduceLargerThanOneRanksBufferFailsEveryRankAndLeavesTheBuffers() throws Exception {
    List<String> messages = new ArrayList<>();
    ranks(3, all(3, true), rank -> {
      int r = rank.comm.rank();
      rank.fill();
      cl_mem small = clCreateBuffer(ocl.context(), CL_MEM_READ_WRITE, 16, null, null);
      cl_mem target = r == 2 ? small : rank.x;
      CompletableFuture<Void> f = rank.messenger.allreduceAfter(target, N, Datatype.INT, ReduceOp.SUM);
      CompletionException e = assertThrows(CompletionException.class, f::join);
      synchronized (messages) {
        messages.add(e.getCause().getMessage());
      }
      int[] x = rank.read(rank.x);
      for (int i = 0; i < N; i++) {
        assertEquals((r + 1) * (i + 1), x[i], "rank " + r + "'s buffer keeps its values");
      }
      clReleaseMemObject(small);
    });
    assertEquals(1, messages.stream().distinct().count(), messages.toString());
    assertTrue(messages.get(0).contains("failed: rank 2's device work before it failed (CL_INVALID_VALUE)"),
        messages.get(0));
  }

  /**
   * A broadcast whose write one receiver's device refuses (its buffer is too small), on the progress thread: that
   * rank still takes part and fails alone, with the device's reason; the root and the other receiver get the data
   * and do not wait for it.
   */
  @Test
  void aBroadcastThatOneReceiversDeviceRefusesFailsThereAloneAndReachesTheOthers() throws Exception {
    ranks(3, all(3, false), rank -> {
      int r = rank.comm.rank();
      rank.fill();
      cl_mem small = clCreateBuffer(ocl.context(), CL_MEM_READ_WRITE, 16, null, null);
      try {
        CompletableFuture<Void> f = rank.messenger.bcastAfter(r == 2 ? small : rank.x, (long) N * Sizeof.cl_int, 0);
        if (r == 2) {
          CompletionException e = assertThrows(CompletionException.class,
              () -> f.orTimeout(30, TimeUnit.SECONDS).join());
          assertTrue(e.getCause().getMessage().contains("CL_INVALID_VALUE"), e.getCause().getMessage());
        } else {
          f.orTimeout(30, TimeUnit.SECONDS).join();
          int[] x = rank.read(rank.x);
          for (int i = 0; i < N; i++) {
            assertEquals(i + 1, x[i], "rank " + r + " holds the root's values, element " + i);
          }
        }
      } finally {
        clReleaseMemObject(small);
      }
    });
  }

  /**
   * A collective that the other rank never joins: it has started, and the other rank could still complete it, so
   * closing the messenger does not drop it; at its deadline rank 0 names the absent rank (and aborts the job), the
   * close returns and the queue drains, whether it runs on the queue or on the progress thread (the gate opens).
   */
  @Test
  void closingWhileACollectiveWaitsForAnAbsentRankEndsItAtItsDeadlineAndReleasesTheQueue() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 30_000);
    try (Rank rank = new Rank(world.rank(0), true, Duration.ofMillis(500))) {
      rank.fill();
      CompletableFuture<Void> f = rank.messenger.allreduceAfter(rank.x, N, Datatype.INT, ReduceOp.SUM);
      rank.twice();
      clFlush(rank.queue);
      Thread.sleep(200);
      assertFalse(f.isDone());
      long t0 = System.nanoTime();
      rank.messenger.close();
      assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(10), "the close returned at the deadline");
      CompletableFuture<Integer> finished = CompletableFuture.supplyAsync(() -> clFinish(rank.queue));
      assertEquals(0, finished.get(20, TimeUnit.SECONDS), "the queue drained after the close");
      CompletionException e = assertThrows(CompletionException.class, f::join);
      assertTrue(e.getCause().getMessage().contains("ranks [1] of 2 did not start it within 500 ms"),
          e.getCause().getMessage());
    }
  }

  /**
   * A round trip between kernels: rank 0 fills, sends, receives the reply, doubles it; rank 1 receives, doubles,
   * sends back; all enqueued without waiting, on the queue or through the progress thread on either side.
   */
  @ParameterizedTest
  @ValueSource(strings = {"true,true", "true,false", "false,true"})
  void aRoundTripBetweenKernelsCarriesTheDataWhereverEachSideRunsIt(String sides) throws Exception {
    String[] s = sides.split(",");
    ranks(2, new boolean[] {Boolean.parseBoolean(s[0]), Boolean.parseBoolean(s[1])}, rank -> {
      long bytes = (long) N * Sizeof.cl_int;
      List<CompletableFuture<Void>> futures = new ArrayList<>();
      if (rank.comm.rank() == 0) {
        rank.fill(); // x = i + 1
        futures.add(rank.messenger.sendAfter(rank.x, bytes, 1, 7));
        futures.add(rank.messenger.receiveBefore(rank.x, bytes, 1, 8));
        rank.twice(); // y = 2 * (what rank 1 sent back: 2 * (i + 1))
      } else {
        futures.add(rank.messenger.receiveBefore(rank.x, bytes, 0, 7));
        rank.twice();
        futures.add(rank.messenger.sendAfter(rank.y, bytes, 0, 8));
      }
      CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
      if (rank.comm.rank() == 0) {
        int[] y = rank.read(rank.y);
        for (int i = 0; i < N; i++) {
          assertEquals(4 * (i + 1), y[i], "element " + i);
        }
      }
    });
  }

  /** A sub-buffer runs on its parent at its offset: only its part of the parent changes, on every rank. */
  @Test
  void anAllReduceOnASubBufferChangesOnlyThatPartOfItsParent() throws Exception {
    ranks(2, all(2, true), rank -> {
      int r = rank.comm.rank();
      rank.fill(); // x[i] = (r + 1) * (i + 1)
      org.jocl.cl_buffer_region region = new org.jocl.cl_buffer_region(512, 256); // ints 128 to 191
      int[] err = new int[1];
      cl_mem sub = org.jocl.CL.clCreateSubBuffer(rank.x, CL_MEM_READ_WRITE, org.jocl.CL.CL_BUFFER_CREATE_TYPE_REGION,
          region, err);
      check(err[0]);
      try {
        rank.messenger.allreduceAfter(sub, 64, Datatype.INT, ReduceOp.SUM).get(30, TimeUnit.SECONDS);
        int[] x = rank.read(rank.x);
        for (int i = 0; i < N; i++) {
          int expected = i >= 128 && i < 192 ? 3 * (i + 1) : (r + 1) * (i + 1);
          assertEquals(expected, x[i], "rank " + r + ", element " + i);
        }
      } finally {
        clReleaseMemObject(sub);
      }
    });
  }
}
