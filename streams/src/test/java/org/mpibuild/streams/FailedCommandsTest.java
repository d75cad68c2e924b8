package org.mpibuild.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;
import org.mpibuild.streams.StreamOrderedMessagesTest.Step;
import org.mpibuild.testkit.InProcessCommunicator;

/** Operations of the queue's whose command failed, found and taken over, with no progress thread running. */
class FailedCommandsTest {
  private final Communicator comm = new InProcessCommunicator.World(1, 20_000).rank(0);
  private final CollectiveTickets tickets = CollectiveTickets.of(comm);
  private final StagingPool pool = new StagingPool(1 << 20);
  private final OperationTable table = new OperationTable("test", tickets, pool, new ProgressThread("test", tickets));
  private final FailedCommands failed = new FailedCommands(table, pool);

  private StreamOp onQueue(StreamOp.Kind kind) {
    StreamOp op = new StreamOp(kind, kind == StreamOp.Kind.ALL_REDUCE ? null : ByteBuffer.allocateDirect(8), 0, 1,
        null, null, null);
    if (kind == StreamOp.Kind.ALL_REDUCE) {
      op.count = 2;
      op.type = Datatype.INT;
      op.reduceOp = ReduceOp.SUM;
    }
    op.onQueue = true;
    table.add(op);
    return op;
  }

  @Test
  void theSweepAsksOnlyTheEarliestUnclaimedCommandAndTakesItsOperationOver() {
    StreamOp claimed = onQueue(StreamOp.Kind.RECEIVE);
    assertTrue(claimed.claim(StreamOp.QUEUE)); // the queue's thread runs it
    StreamOp collective = onQueue(StreamOp.Kind.ALL_REDUCE);
    Step command = new Step();
    collective.command = command;
    StreamOp later = onQueue(StreamOp.Kind.SEND);
    Step laterCommand = new Step();
    laterCommand.error = new IllegalStateException("failed too");
    later.command = laterCommand;
    failed.sweep();
    assertEquals(StreamOp.NOBODY, collective.driver(), "its command has not failed");
    command.error = new DeviceFailure("CL_OUT_OF_RESOURCES", -5);
    failed.sweep();
    assertEquals(StreamOp.PROGRESS, collective.driver());
    assertSame(command.error, collective.localFailure);
    assertNotNull(collective.staging, "takes part from a staging buffer of its own");
    assertSame(collective.staging, collective.receive);
    assertEquals(List.of(collective), table.snapshot(new ProgressPass(false)));
    assertEquals(StreamOp.NOBODY, later.driver(), "one command a sweep: the later one is not asked yet");
    failed.sweep();
    assertEquals(StreamOp.PROGRESS, later.driver(), "asked once the earlier one has gone");
    assertTrue(later.future.isCompletedExceptionally(), "a send whose command failed fails");
  }

  @Test
  void aCommandCompletedWithoutRunningItsOperationFailedInside() {
    StreamOp receive = onQueue(StreamOp.Kind.RECEIVE);
    Step command = new Step();
    command.finished = true;
    receive.command = command;
    failed.sweep();
    assertEquals(StreamOp.State.WAIT_MPI, receive.state, "receives the message, so that its sender completes");
    assertTrue(receive.localFailure.getMessage().contains("completed without running it"));
  }

  @Test
  void aSendWhoseCommandFailedFailsAndOneTheQueueClaimedIsLeftToIt() {
    StreamOp send = onQueue(StreamOp.Kind.SEND);
    failed.takeOver(send, new DeviceFailure("clEnqueueNativeKernel failed: CL_INVALID_VALUE", -30));
    CompletionException e = assertThrows(CompletionException.class, send.future::join);
    assertTrue(e.getCause().getMessage().contains("its command on the device's queue failed: clEnqueueNativeKernel"),
        e.getCause().getMessage());
    StreamOp running = onQueue(StreamOp.Kind.SEND);
    running.claim(StreamOp.QUEUE);
    failed.takeOver(running, new IllegalStateException("late"));
    assertFalse(running.future.isDone());
    assertEquals(null, running.localFailure);
  }
}
