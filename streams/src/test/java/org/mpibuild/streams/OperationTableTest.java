package org.mpibuild.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;
import org.mpibuild.streams.StreamOrderedMessagesTest.Gate;
import org.mpibuild.streams.StreamOrderedMessagesTest.Step;
import org.mpibuild.testkit.InProcessCommunicator;

/** The operations of one helper, their order and their ends, with no progress thread running. */
class OperationTableTest {
  private final Communicator comm = new InProcessCommunicator.World(1, 20_000).rank(0);
  private final CollectiveTickets tickets = CollectiveTickets.of(comm);
  private final StagingPool pool = new StagingPool(1 << 20);
  private final OperationTable table = new OperationTable("test", tickets, pool, new ProgressThread("test", tickets));

  private StreamOp send(int bytes) {
    return new StreamOp(StreamOp.Kind.SEND, pool.take(bytes), 0, 1, new Step(), null, null);
  }

  private StreamOp receive(int bytes, Gate gate) {
    return new StreamOp(StreamOp.Kind.RECEIVE, pool.take(bytes), 0, 1, null, gate, new Step());
  }

  private StreamOp allReduce(ByteBuffer send, ByteBuffer receive, Gate gate) {
    StreamOp op = new StreamOp(StreamOp.Kind.ALL_REDUCE, send, -1, -1, new Step(), gate, new Step());
    op.receive = receive;
    op.count = 1;
    op.type = Datatype.INT;
    op.reduceOp = ReduceOp.SUM;
    return op;
  }

  @Test
  void operationsKeepTheOrderTheyWereAskedForAndCollectivesTakeTicketsInIt() {
    table.add(send(8));
    StreamOp a = allReduce(pool.take(4), pool.take(4), new Gate());
    StreamOp s = send(8);
    StreamOp b = allReduce(pool.take(4), pool.take(4), new Gate());
    StreamOp queued = send(8);
    queued.onQueue = true;
    for (StreamOp op : List.of(a, s, b, queued)) {
      table.add(op);
    }
    assertEquals(List.of(1L, 2L, 3L, 4L), List.of(a.seq, s.seq, b.seq, queued.seq));
    assertEquals(a.ticket + 1, b.ticket, "collectives' tickets in order");
    assertEquals(-1, s.ticket, "no ticket for a send");
    ProgressPass pass = new ProgressPass(false);
    List<StreamOp> snapshot = table.snapshot(pass);
    assertEquals(4, snapshot.size(), "the queue's operation is not the progress thread's");
    assertTrue(pass.any);
    assertEquals(5, table.inFlight());
    assertSame(queued, table.firstUnclaimedOnQueue());
  }

  @Test
  void aHandedOverOperationBecomesTheProgressThreadsAtTheEnd() {
    StreamOp queued = receive(8, null);
    queued.onQueue = true;
    table.add(queued);
    StreamOp later = send(8);
    table.add(later);
    assertTrue(table.earlierReceiveUnposted(later), "the queue's receive is not posted yet");
    table.handOver(queued);
    assertEquals(StreamOp.PROGRESS, queued.driver());
    assertEquals(List.of(later, queued), table.snapshot(new ProgressPass(false)));
    assertEquals(null, table.firstUnclaimedOnQueue());
  }

  @Test
  void aFinishedOperationReleasesItsStepsAsCompletedAndGivesItsBuffersBack() {
    StreamOp op = send(16);
    table.add(op);
    table.finish(op);
    assertTrue(((Step) op.before).releasedCompleted);
    assertEquals(16, pool.freeBytes());
    assertEquals(0, table.inFlight());
    op.future.join();
  }

  @Test
  void aFailedAllReducePutsItsOwnValuesBackBehindItsFailedGateAndKeepsItsBuffers() {
    ByteBuffer mine = pool.take(4).order(ByteOrder.nativeOrder()).putInt(0, 7);
    ByteBuffer results = pool.take(4).putInt(0, 99);
    Gate gate = new Gate();
    StreamOp op = allReduce(mine, results, gate);
    table.add(op);
    op.state = StreamOp.State.WAIT_MPI; // started, MPI not done
    table.fail(op, new IllegalStateException("boom"));
    assertTrue(gate.failed);
    assertEquals(7, results.getInt(0), "the write behind the gate writes this rank's own values");
    assertTrue(((Step) op.before).released);
    assertFalse(((Step) op.before).releasedCompleted);
    pool.give(mine);
    pool.give(results);
    assertEquals(0, pool.freeBytes(), "MPI may still use them: never reused");
    CompletionException e = assertThrows(CompletionException.class, op.future::join);
    assertEquals("boom", e.getCause().getMessage());
    assertEquals(StreamOp.State.DONE, op.state);
  }

  @Test
  void aCollectiveThatTookPartAsClosedBeforeItsValuesWereReadPutsNothingBack() {
    ByteBuffer mine = pool.take(4).order(ByteOrder.nativeOrder()).putInt(0, 7); // the device's read not finished
    ByteBuffer results = pool.take(4).putInt(0, 99);
    StreamOp op = allReduce(mine, results, new Gate());
    table.add(op);
    op.closing = true; // its helper was closed before it started: it took part without waiting for its read
    op.state = StreamOp.State.CHECK;
    table.fail(op, new IllegalStateException("closed"));
    assertEquals(99, results.getInt(0), "its staging buffer does not hold this rank's values yet");
  }

  @Test
  void aCollectiveThatFailsBeforeItsTurnGivesItUp() {
    StreamOp op = allReduce(pool.take(4), pool.take(4), new Gate());
    table.add(op);
    StreamOp next = allReduce(pool.take(4), pool.take(4), new Gate());
    table.add(next);
    assertTrue(tickets.isTurn(op.ticket));
    table.fail(op, new IllegalStateException("closed"));
    assertTrue(tickets.isTurn(next.ticket), "the next collective goes on");
  }

  @Test
  void aClosedTableAddsNothingAndGivesUpTheBuffers() {
    assertTrue(table.close());
    assertFalse(table.close(), "once");
    assertTrue(table.closed());
    StreamOp op = send(8);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> table.add(op));
    assertEquals("stream-ordered messages on test: they were closed", e.getMessage());
    pool.give(op.staging);
    assertEquals(0, pool.freeBytes(), "device work for it may be enqueued: never reused");
    assertEquals(0, table.inFlight());
  }
}
