package org.mpibuild.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.mpibuild.streams.StreamOrderedMessagesTest.Gate;
import org.mpibuild.streams.StreamOrderedMessagesTest.ScriptedComm;
import org.mpibuild.streams.StreamOrderedMessagesTest.Step;

/** Sends and receives moved on one pass at a time, on a scripted MPI, with no progress thread. */
class PointToPointStepsTest {
  private final ScriptedComm comm = new ScriptedComm();
  private final CollectiveTickets tickets = CollectiveTickets.of(comm);
  private final OperationTable table = new OperationTable("test", tickets, new StagingPool(1 << 20),
      new ProgressThread("test", tickets));
  private final PointToPointSteps steps = new PointToPointSteps(comm, table);

  private static StreamOp send(int first, Step filled) {
    return new StreamOp(StreamOp.Kind.SEND, ByteBuffer.allocateDirect(8).put(0, (byte) first), 1, 0, filled, null,
        null);
  }

  /** One pass over {@code ops}, as the progress loop makes it. */
  private ProgressPass pass(List<StreamOp> ops) {
    ProgressPass pass = new ProgressPass(false);
    pass.any = !ops.isEmpty(); // as the table's snapshot says
    for (StreamOp op : ops) {
      steps.step(op, pass);
      pass.saw(op);
    }
    return pass;
  }

  @Test
  void aSendWhoseDataIsReadyWaitsForAnEarlierSendToStart() {
    Step slow = new Step();
    Step ready = new Step();
    ready.finished = true;
    StreamOp first = send(1, slow);
    StreamOp second = send(2, ready);
    ProgressPass pass = pass(List.of(first, second));
    assertEquals(List.of(), comm.started());
    assertFalse(pass.moved);
    slow.finished = true;
    pass = pass(List.of(first, second));
    assertEquals(List.of("send 1", "send 2"), comm.started());
    assertTrue(pass.moved);
    assertTrue(pass.mpi, "both wait for MPI now");
    comm.done.get(0).set(true);
    pass(List.of(first, second));
    assertEquals(StreamOp.State.DONE, first.state);
    assertEquals(StreamOp.State.WAIT_MPI, second.state);
  }

  @Test
  void aReceiveIsPostedAfterEveryEarlierReceiveAndOpensItsGateWhenTheMessageIsIn() {
    StreamOp onQueue = new StreamOp(StreamOp.Kind.RECEIVE, ByteBuffer.allocateDirect(8), 1, 3, null, null, null);
    onQueue.onQueue = true;
    table.add(onQueue); // asked for first, run by the queue, not posted yet
    Gate gate = new Gate();
    StreamOp receive = new StreamOp(StreamOp.Kind.RECEIVE, ByteBuffer.allocateDirect(8), 1, 4, null, gate,
        new Step());
    table.add(receive);
    pass(List.of(receive));
    assertEquals(List.of(), comm.started(), "waits for the earlier receive");
    onQueue.request = comm.iReceive(onQueue.staging, 1, 3); // the queue's thread posts it
    pass(List.of(receive));
    assertEquals(List.of("receive 3", "receive 4"), comm.started());
    assertFalse(gate.opened);
    comm.done.get(1).set(true);
    pass(List.of(receive));
    assertTrue(gate.opened);
    assertEquals(StreamOp.State.WAIT_WRITE, receive.state);
    ((Step) receive.after).finished = true;
    pass(List.of(receive));
    assertEquals(StreamOp.State.DONE, receive.state);
  }

  /** A device step that wakes the progress thread when it finishes (OpenCL's event callbacks). */
  private static final class WakingStep extends Step {
    private Runnable wake;

    @Override
    public boolean wakeWhenFinished(Runnable wake) {
      this.wake = wake;
      return true;
    }

    void finish() {
      finished = true;
      wake.run();
    }
  }

  @Test
  void aReceiveWhoseGateTheDeviceHasNotReachedIsTestedButDoesNotHurryTheThread() {
    WakingStep kernels = new WakingStep(); // the device work queued before the send, still running
    StreamOp first = send(1, kernels);
    StreamOp receive = new StreamOp(StreamOp.Kind.RECEIVE, ByteBuffer.allocateDirect(8), 1, 4, null, new Gate(),
        new Step());
    table.add(first);
    table.add(receive);
    pass(List.of(first, receive));
    assertEquals(List.of("receive 4"), comm.started(), "posted at once, so that MPI can match an early message");
    ProgressPass pass = pass(List.of(first, receive)); // a pass in which nothing moves
    assertFalse(pass.mpi, "the device is behind the send: it cannot be at the receive's gate");
    assertTrue(pass.mpiDeferred);
    assertTrue(longestPark(pass) > ParkPolicy.MPI_PARK_NANOS, "its parks grow past MPI's short ones");
    pass.polledDevice = true; // had the step before it to be polled, it would be asked as often as before
    assertEquals(ParkPolicy.MPI_PARK_NANOS, longestPark(pass));
    pass.polledDevice = false;
    kernels.finish();
    pass = pass(List.of(first, receive));
    assertEquals(List.of("receive 4", "send 1"), comm.started());
    assertTrue(pass.mpi, "the device may be at the gate now: the receive is hurried (and the send)");
    comm.done.get(1).set(true); // the send completes
    pass(List.of(first, receive));
    pass = pass(List.of(first, receive));
    assertTrue(pass.mpi, "the receive alone, the device past everything before it");
    assertFalse(pass.mpiDeferred);
    assertEquals(ParkPolicy.MPI_PARK_NANOS, longestPark(pass), "MPI's short parks");
  }

  /** The longest park that passes like {@code pass}, one every millisecond, lead to within 15 ms. */
  private static long longestPark(ProgressPass pass) {
    ParkPolicy parks = new ParkPolicy(0);
    long longest = 0;
    for (int ms = 1; ms <= 15; ms++) { // within ParkPolicy.MPI_IDLE_NANOS
      longest = Math.max(longest, parks.next(pass, ms * 1_000_000L));
    }
    return longest;
  }
}
