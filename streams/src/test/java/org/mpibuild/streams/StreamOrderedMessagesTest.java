package org.mpibuild.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.ForwardingCommunicator;
import org.mpibuild.testkit.InProcessCommunicator;

/** The progress engine of stream-ordered messages, with a scripted MPI and scripted device steps. */
class StreamOrderedMessagesTest {
  /** Two ranks as seen from rank 0; every send and receive is recorded and completes when told to. */
  static final class ScriptedComm extends ForwardingCommunicator {
    final List<String> started = new ArrayList<>();
    final List<AtomicBoolean> done = new ArrayList<>();
    ThreadLevel level = ThreadLevel.MULTIPLE;

    ScriptedComm() {
      // One rank of the kit's for what is not scripted here (its rank number, its description).
      super(new InProcessCommunicator.World(1, 20_000).rank(0));
    }

    @Override
    public int size() {
      return 2;
    }

    @Override
    public ThreadLevel threadLevel() {
      return level;
    }

    private synchronized Request start(String what) {
      started.add(what);
      AtomicBoolean d = new AtomicBoolean();
      done.add(d);
      return new Request() {
        @Override
        public boolean test() {
          return d.get();
        }

        @Override
        public void await() {
          while (!d.get()) {
            Thread.onSpinWait();
          }
        }
      };
    }

    @Override
    public Request iSend(ByteBuffer buffer, int dest, int tag) {
      return start("send " + buffer.get(0));
    }

    @Override
    public Request iReceive(ByteBuffer buffer, int source, int tag) {
      return start("receive " + tag);
    }

    synchronized List<String> started() {
      return List.copyOf(started);
    }
  }

  static class Step implements DeviceStep {
    volatile boolean finished;
    volatile RuntimeException error;
    volatile boolean released;
    /** Whether the release said the operation completed (its memory may be reused). */
    volatile boolean releasedCompleted;

    @Override
    public boolean finished() {
      if (error != null) {
        throw error;
      }
      return finished;
    }

    @Override
    public void release() {
      released = true;
    }

    @Override
    public void releaseCompleted() {
      released = true;
      releasedCompleted = true;
    }
  }

  static final class Gate implements org.mpibuild.streams.Gate {
    volatile boolean opened;
    volatile boolean failed;

    @Override
    public void open() {
      opened = true;
    }

    @Override
    public void fail() {
      failed = true;
    }
  }

  static ByteBuffer staging(int first) {
    return ByteBuffer.allocateDirect(8).put(0, (byte) first);
  }

  static void eventually(String what, java.util.function.BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "timed out waiting until " + what);
      Thread.sleep(1);
    }
  }

  @Test
  void sendsStartInOrderOnlyOnceTheirDataIsOnTheHost() throws Exception {
    ScriptedComm comm = new ScriptedComm();
    try (StreamOrderedMessages m = new StreamOrderedMessages(comm, "test")) {
      Step first = new Step();
      Step second = new Step();
      CompletableFuture<Void> f1 = m.send(staging(1), 1, 0, first);
      CompletableFuture<Void> f2 = m.send(staging(2), 1, 0, second);
      second.finished = true; // the later read finished first: it must still wait for the earlier send
      Thread.sleep(50);
      assertEquals(List.of(), comm.started());
      first.finished = true;
      eventually("both sends started", () -> comm.started().size() == 2);
      assertEquals(List.of("send 1", "send 2"), comm.started());
      comm.done.forEach(d -> d.set(true));
      f1.get(5, TimeUnit.SECONDS);
      f2.get(5, TimeUnit.SECONDS);
      assertTrue(first.released && second.released);
    }
  }

  @Test
  void aReceiveOpensItsGateAfterTheMessageAndCompletesAfterTheWrite() throws Exception {
    ScriptedComm comm = new ScriptedComm();
    try (StreamOrderedMessages m = new StreamOrderedMessages(comm, "test")) {
      Gate gate = new Gate();
      Step written = new Step();
      CompletableFuture<Void> f = m.receive(staging(0), 1, 5, gate, written);
      eventually("the receive was posted", () -> comm.started().size() == 1);
      Thread.sleep(20);
      assertTrue(!gate.opened && !f.isDone());
      comm.done.get(0).set(true);
      eventually("the gate opened", () -> gate.opened);
      assertTrue(!f.isDone(), "complete only when the data is on the device");
      written.finished = true;
      f.get(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void onlyACompletedOperationTellsItsStepsTheirMemoryMayBeReused() throws Exception {
    // the CUDA messenger reuses a step's pinned memory only then: MPI or the device may still use a failed one's
    ScriptedComm comm = new ScriptedComm();
    try (StreamOrderedMessages m = new StreamOrderedMessages(comm, "test")) {
      Step written = new Step();
      CompletableFuture<Void> ok = m.receive(staging(0), 1, 5, new Gate(), written);
      eventually("the receive was posted", () -> comm.started().size() == 1);
      comm.done.get(0).set(true);
      written.finished = true;
      ok.get(5, TimeUnit.SECONDS);
      eventually("the steps were released", () -> written.released);
      assertTrue(written.releasedCompleted, "a completed receive's step may lend its memory again");

      Step read = new Step();
      CompletableFuture<Void> failed = m.send(staging(1), 1, 3, read);
      read.error = new IllegalStateException("the device command failed");
      assertThrows(CompletionException.class, failed::join);
      eventually("the failed send's step was released", () -> read.released);
      assertFalse(read.releasedCompleted, "a failed send's memory must not be lent again");
    }
  }

  @Test
  void aDeviceErrorFailsTheFutureWithTheReason() throws Exception {
    ScriptedComm comm = new ScriptedComm();
    try (StreamOrderedMessages m = new StreamOrderedMessages(comm, "test")) {
      Step read = new Step();
      CompletableFuture<Void> f = m.send(staging(1), 1, 3, read);
      read.error = new IllegalStateException("the device command failed: CL_OUT_OF_RESOURCES");
      CompletionException e = assertThrows(CompletionException.class, f::join);
      assertTrue(e.getCause().getMessage().contains("send of 8 bytes to rank 1 (tag 3) failed: the device command "
          + "failed: CL_OUT_OF_RESOURCES"), e.getCause().getMessage());
    }
  }

  @Test
  void closingWithOperationsInFlightFailsThemAndTheirGates() throws Exception {
    ScriptedComm comm = new ScriptedComm();
    StreamOrderedMessages m = new StreamOrderedMessages(comm, "test");
    Gate gate = new Gate();
    CompletableFuture<Void> f = m.receive(staging(0), 1, 0, gate, new Step());
    m.close();
    CompletionException e = assertThrows(CompletionException.class, f::join);
    assertTrue(e.getCause().getMessage().contains("closed with 1 operation(s) in flight"), e.getCause().getMessage());
    assertTrue(gate.failed, "work queued behind the gate must not wait forever");
    assertThrows(IllegalStateException.class, () -> m.send(staging(1), 1, 0, new Step()));
  }

  @Test
  void needsThreadMultipleAndValidPeers() {
    ScriptedComm comm = new ScriptedComm();
    comm.level = Communicator.ThreadLevel.FUNNELED;
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> new StreamOrderedMessages(comm, "q"));
    assertTrue(e.getMessage().contains("MPI_THREAD_FUNNELED") && e.getMessage().contains("THREAD_MULTIPLE"));
    comm.level = Communicator.ThreadLevel.MULTIPLE;
    try (StreamOrderedMessages m = new StreamOrderedMessages(comm, "q")) {
      IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
          () -> m.send(staging(1), 2, 0, new Step()));
      assertTrue(bad.getMessage().contains("rank 2 is out of range"), bad.getMessage());
      assertThrows(IllegalArgumentException.class, () -> m.send(staging(1), 1, -1, new Step()));
    }
  }

  /** A step that counts how often it is asked. */
  static final class CountingStep extends Step {
    final java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();

    @Override
    public boolean finished() {
      asked.incrementAndGet();
      return super.finished();
    }
  }

  @Test
  void onlyTheEarliestUnfinishedStepIsAskedHoweverManyAreQueued() throws Exception {
    ScriptedComm comm = new ScriptedComm();
    // a short deadline: the close waits for the broadcasts left, and rank 1 never comes
    try (StreamOrderedMessages m = new StreamOrderedMessages(comm, "test", java.time.Duration.ofMillis(200),
        code -> "error " + code)) {
      List<CountingStep> steps = new ArrayList<>();
      for (int i = 0; i < 50; i++) { // broadcasts from this rank: each waits for its read (filled) and its turn
        CountingStep s = new CountingStep();
        steps.add(s);
        m.broadcast(ByteBuffer.allocateDirect(16), 0, s, null, null);
      }
      eventually("the first step was asked a few times", () -> steps.get(0).asked.get() >= 5);
      for (int i = 1; i < steps.size(); i++) {
        assertEquals(0, steps.get(i).asked.get(), "step " + i + " is queued behind an unfinished step");
      }
      steps.get(0).finished = true;
      eventually("the first broadcast started", () -> comm.started().size() == 1); // its arrival from rank 1
      eventually("the second step was asked", () -> steps.get(1).asked.get() > 0);
      for (int i = 2; i < steps.size(); i++) {
        assertEquals(0, steps.get(i).asked.get(), "step " + i + " is queued behind an unfinished step");
      }
    }
  }

  @Test
  void stagingBuffersComeBackOnlyFromOperationsThatCompleted() throws Exception {
    ScriptedComm comm = new ScriptedComm();
    try (StreamOrderedMessages m = new StreamOrderedMessages(comm, "test")) {
      ByteBuffer first = m.staging(16);
      assertEquals(16, first.remaining());
      assertEquals(java.nio.ByteOrder.nativeOrder(), first.order());
      Step read = new Step();
      read.finished = true;
      CompletableFuture<Void> sent = m.send(first, 1, 0, read);
      eventually("the send started", () -> comm.started().size() == 1);
      assertEquals(0, m.stagingBytesPooled(), "lent until the operation completes");
      comm.done.get(0).set(true);
      sent.get(5, TimeUnit.SECONDS);
      eventually("the buffer came back", () -> m.stagingBytesPooled() == 16);
      ByteBuffer again = m.staging(16);
      assertTrue(again == first, "the completed operation's buffer is reused");

      Step broken = new Step();
      broken.error = new IllegalStateException("the device command failed");
      CompletableFuture<Void> failed = m.send(again, 1, 0, broken);
      assertThrows(CompletionException.class, failed::join);
      Thread.sleep(20);
      assertEquals(0, m.stagingBytesPooled(), "a failed operation's buffer may still be read by the device");
      assertTrue(m.staging(16) != first);
      assertThrows(IllegalArgumentException.class, () -> m.staging(0));
    }
  }

  @Test
  void anInPlaceAllReduceThatFailsOnOneRankLeavesEveryRanksValuesAlone() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 20_000);
    ByteBuffer[] values = new ByteBuffer[2];
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    List<StreamOrderedMessages> helpers = new ArrayList<>();
    try {
      for (int r = 0; r < 2; r++) {
        // in place, as QueueMessenger does on a mapped device buffer
        values[r] = ByteBuffer.allocateDirect(4 * Integer.BYTES).order(java.nio.ByteOrder.nativeOrder());
        for (int i = 0; i < 4; i++) {
          values[r].putInt(i * Integer.BYTES, 10 * (r + 1) + i);
        }
        StreamOrderedMessages m = new StreamOrderedMessages(world.rank(r), "rank " + r);
        helpers.add(m);
        Step filled = new Step();
        if (r == 1) {
          filled.error = new DeviceFailure("the read failed", -5);
        } else {
          filled.finished = true;
        }
        futures.add(m.allReduce(values[r], values[r], 4, Communicator.Datatype.INT, Communicator.ReduceOp.SUM,
            filled, new Gate(), new Step()));
      }
      for (int r = 0; r < 2; r++) {
        int rank = r;
        CompletionException e = assertThrows(CompletionException.class, () -> futures.get(rank).join());
        assertTrue(e.getCause().getMessage().contains("rank 1's device work before it failed (error -5)"),
            e.getCause().getMessage());
        for (int i = 0; i < 4; i++) {
          assertEquals(10 * (r + 1) + i, values[r].getInt(i * Integer.BYTES),
              "rank " + r + "'s buffer keeps its own values, not a sum that took rank 1's undefined input");
        }
      }
    } finally {
      helpers.forEach(StreamOrderedMessages::close);
    }
  }

  @Test
  void aRankWhoseDeviceRefusedTheCollectiveStillTakesPartSoNoRankWaitsForIt() throws Exception {
    int size = 3;
    InProcessCommunicator.World world = new InProcessCommunicator.World(size, 20_000);
    List<StreamOrderedMessages> helpers = new ArrayList<>();
    try {
      List<CompletableFuture<Void>> reduced = new ArrayList<>();
      List<CompletableFuture<Void>> fromRefusedRoot = new ArrayList<>();
      List<CompletableFuture<Void>> toRefusedReceiver = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        StreamOrderedMessages m = new StreamOrderedMessages(world.rank(r), "rank " + r);
        helpers.add(m);
        DeviceFailure refusal = new DeviceFailure("cuStreamWaitValue32 failed: CUDA_ERROR_NOT_SUPPORTED", 801);
        // an all-reduce that rank 1's device refused: every rank fails with rank 1's refusal
        ByteBuffer values = ByteBuffer.allocateDirect(4 * Integer.BYTES).order(java.nio.ByteOrder.nativeOrder());
        Step filled = new Step();
        filled.finished = true;
        reduced.add(r == 1
            ? m.allReduceRefused(4, Communicator.Datatype.INT, Communicator.ReduceOp.SUM, refusal)
            : m.allReduce(values, values, 4, Communicator.Datatype.INT, Communicator.ReduceOp.SUM, filled, new Gate(),
                new Step()));
        // a broadcast whose root (rank 0) was refused: the refusal travels to every rank
        ByteBuffer first = ByteBuffer.allocateDirect(StreamOrderedMessages.BROADCAST_HEADER + 16);
        fromRefusedRoot.add(r == 0 ? m.broadcastRefused(16, 0, refusal)
            : m.broadcast(first, 0, null, new Gate(), finishedStep()));
        // a broadcast whose receiver rank 2 was refused: only rank 2 fails, and the others do not wait for it
        ByteBuffer second = ByteBuffer.allocateDirect(StreamOrderedMessages.BROADCAST_HEADER + 16);
        toRefusedReceiver.add(r == 0 ? m.broadcast(second, 0, finishedStep(), null, null)
            : r == 2 ? m.broadcastRefused(16, 0, refusal)
            : m.broadcast(second, 0, null, new Gate(), finishedStep()));
      }
      for (int r = 0; r < size; r++) {
        int rank = r;
        CompletionException e = assertThrows(CompletionException.class,
            () -> reduced.get(rank).orTimeout(10, TimeUnit.SECONDS).join());
        assertTrue(e.getCause().getMessage().contains("rank 1's device work before it failed (error 801)"),
            "rank " + r + ": " + e.getCause().getMessage());
        CompletionException b = assertThrows(CompletionException.class,
            () -> fromRefusedRoot.get(rank).orTimeout(10, TimeUnit.SECONDS).join());
        assertTrue(b.getCause().getMessage().contains("rank 0's device work before it failed (error 801)"),
            "rank " + r + ": " + b.getCause().getMessage());
        if (r == 2) {
          CompletionException own = assertThrows(CompletionException.class,
              () -> toRefusedReceiver.get(rank).orTimeout(10, TimeUnit.SECONDS).join());
          assertTrue(own.getCause().getMessage().contains("CUDA_ERROR_NOT_SUPPORTED"), own.getCause().getMessage());
        } else {
          // completes: a receiver's refusal stays its own
          toRefusedReceiver.get(r).orTimeout(10, TimeUnit.SECONDS).join();
        }
      }
    } finally {
      helpers.forEach(StreamOrderedMessages::close);
    }
  }

  private static Step finishedStep() {
    Step s = new Step();
    s.finished = true;
    return s;
  }
}
