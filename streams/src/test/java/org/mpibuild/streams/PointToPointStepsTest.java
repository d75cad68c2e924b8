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
}
