package org.mpibuild.streams;

import static org.mpibuild.streams.TestBuffers.ints;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;
import org.mpibuild.streams.StreamOrderedMessagesTest.Gate;
import org.mpibuild.streams.StreamOrderedMessagesTest.Step;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * Operations that the device's queue runs itself ({@link QueuedOperation}), with ranks
 * in one JVM: a thread stands for the queue's worker that runs the command.
 */
class QueuedOperationsTest {
  private final List<StreamOrderedMessages> helpers = new ArrayList<>();

  @AfterEach
  void close() {
    helpers.forEach(StreamOrderedMessages::close);
  }

  private StreamOrderedMessages helper(InProcessCommunicator.World world, int rank) {
    StreamOrderedMessages m = new StreamOrderedMessages(world.rank(rank), "rank " + rank);
    helpers.add(m);
    return m;
  }

  /** The queue's worker reaching the command: runs it on a thread of its own. */
  private static Thread runOnQueue(QueuedOperation c, ByteBuffer device) {
    Thread t = new Thread(() -> c.run(device), "queue worker");
    t.start();
    return t;
  }

  @Test
  void anAllReduceRunByTheQueueReducesInPlaceAndMatchesTheProgressThreadsOnOtherRanks() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 20_000);
    ByteBuffer[] device = {ints(1, 2), ints(10, 20), ints(100, 200)};
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    List<Thread> workers = new ArrayList<>();
    for (int r = 0; r < 3; r++) {
      StreamOrderedMessages m = helper(world, r);
      if (r == 1) { // this rank's helper stages through its progress thread, as on a GPU
        Step filled = new Step();
        filled.finished = true;
        Step written = new Step();
        written.finished = true;
        futures.add(m.allReduce(device[r], device[r], 2, Datatype.INT, ReduceOp.SUM, filled, new Gate(), written));
      } else {
        QueuedOperation c = m.allReduceOnQueue(2, Datatype.INT, ReduceOp.SUM);
        c.enqueued(new Step());
        futures.add(c.future());
        workers.add(runOnQueue(c, device[r]));
      }
    }
    for (Thread t : workers) {
      t.join(10_000);
      assertFalse(t.isAlive(), "the queue's worker returned");
    }
    assertTrue(futures.get(0).isDone() && futures.get(2).isDone(),
        "the queue's collective is complete when its command returns");
    for (int r = 0; r < 3; r++) {
      futures.get(r).get(10, TimeUnit.SECONDS);
      assertEquals(111, device[r].getInt(0), "rank " + r);
      assertEquals(222, device[r].getInt(4), "rank " + r);
    }
  }

  @Test
  void aRankWhoseCommandCouldNotBeEnqueuedFailsEveryRankAndNoBufferChanges() {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 20_000);
    ByteBuffer device = ints(1, 2);
    QueuedOperation ok = helper(world, 0).allReduceOnQueue(2, Datatype.INT, ReduceOp.SUM);
    QueuedOperation refused = helper(world, 1).allReduceOnQueue(2, Datatype.INT, ReduceOp.SUM);
    ok.enqueued(new Step());
    refused.enqueueFailed(new DeviceFailure("clEnqueueNativeKernel failed", -5));
    runOnQueue(ok, device);
    for (CompletableFuture<Void> f : List.of(ok.future(), refused.future())) {
      CompletionException e = assertThrows(CompletionException.class, f::join);
      assertTrue(e.getCause().getMessage().contains("rank 1's device work before it failed (error -5)"),
          e.getCause().getMessage());
    }
    assertEquals(1, device.getInt(0), "rank 0's device buffer keeps its values");
    assertEquals(2, device.getInt(4));
  }

  @Test
  void aCommandThatTheDeviceFailsBeforeItRunsIsTakenOverAndFailsEveryRank() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 20_000);
    ByteBuffer[] device = {ints(1, 2), ints(10, 20)};
    QueuedOperation ok = helper(world, 0).allReduceOnQueue(2, Datatype.INT, ReduceOp.SUM);
    QueuedOperation never = helper(world, 1).allReduceOnQueue(2, Datatype.INT, ReduceOp.SUM);
    ok.enqueued(new Step());
    Step failedCommand = new Step();
    failedCommand.error = new DeviceFailure("a command before it failed", -9999);
    never.enqueued(failedCommand); // the device never runs it: only a sweep of the progress thread finds out
    runOnQueue(ok, device[0]);
    for (CompletableFuture<Void> f : List.of(ok.future(), never.future())) {
      CompletionException e = assertThrows(CompletionException.class, f::join);
      assertTrue(e.getCause().getMessage().contains("rank 1's device work before it failed (error -9999)"),
          e.getCause().getMessage());
    }
    never.run(device[1]); // a late run does nothing: the progress thread took it
    assertEquals(10, device[1].getInt(0));
    assertEquals(1, device[0].getInt(0));
    assertTrue(failedCommand.released, "the command's event is released");
  }

  @Test
  void aBroadcastRunByTheQueueReachesRanksOfBothKinds() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 20_000);
    ByteBuffer rootData = ints(7, 8, 9);
    ByteBuffer queueReceiver = ints(0, 0, 0);
    QueuedOperation root = helper(world, 1).broadcastOnQueue(12, 1);
    QueuedOperation receiver = helper(world, 0).broadcastOnQueue(12, 1);
    // rank 2 receives through its progress thread, into a staging buffer behind a gate
    StreamOrderedMessages m2 = helper(world, 2);
    ByteBuffer staging = m2.staging(StreamOrderedMessages.BROADCAST_HEADER + 12);
    Gate gate = new Gate();
    Step written = new Step();
    written.finished = true;
    CompletableFuture<Void> third = m2.broadcast(staging, 1, null, gate, written);
    root.enqueued(new Step());
    receiver.enqueued(new Step());
    Thread a = runOnQueue(root, rootData);
    Thread b = runOnQueue(receiver, queueReceiver);
    a.join(10_000);
    b.join(10_000);
    root.future().get(10, TimeUnit.SECONDS);
    receiver.future().get(10, TimeUnit.SECONDS);
    third.get(10, TimeUnit.SECONDS);
    for (int i = 0; i < 3; i++) {
      assertEquals(7 + i, queueReceiver.getInt(4 * i), "the queue's receiver has the root's bytes");
      assertEquals(7 + i, staging.getInt(StreamOrderedMessages.BROADCAST_HEADER + 4 * i),
          "the progress thread's receiver has them");
    }
    assertTrue(gate.opened);
  }

  @Test
  void theQueuesCollectiveWaitsForItsTurnBehindAnotherQueuesEarlierOne() throws Exception {
    // Each rank: helper A enqueues collective 0 (progress thread), helper B collective 1 (run by its queue). On
    // rank 0, A's device work is slow and B's queue reaches its command first: B must not start before A, or
    // rank 0's first all-reduce would meet rank 1's A and every sum would be wrong.
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 20_000);
    List<Step> slow = new ArrayList<>();
    List<ByteBuffer> aValues = new ArrayList<>();
    List<ByteBuffer> bValues = new ArrayList<>();
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    List<Thread> workers = new ArrayList<>();
    for (int r = 0; r < 2; r++) {
      InProcessCommunicator comm = world.rank(r); // both helpers on one communicator object: one order
      StreamOrderedMessages a = new StreamOrderedMessages(comm, "A" + r);
      StreamOrderedMessages b = new StreamOrderedMessages(comm, "B" + r);
      helpers.add(a);
      helpers.add(b);
      Step filled = new Step();
      filled.finished = r == 1;
      slow.add(filled);
      Step written = new Step();
      written.finished = true;
      aValues.add(ints(1));
      bValues.add(ints(100));
      futures.add(a.allReduce(aValues.get(r), aValues.get(r), 1, Datatype.INT, ReduceOp.SUM, filled, new Gate(),
          written));
      QueuedOperation c = b.allReduceOnQueue(1, Datatype.INT, ReduceOp.SUM);
      c.enqueued(new Step());
      futures.add(c.future());
      workers.add(runOnQueue(c, bValues.get(r)));
    }
    Thread.sleep(200);
    assertTrue(workers.get(0).isAlive(), "rank 0's queue waits for its turn");
    assertFalse(futures.get(1).isDone(), "rank 0's B has not run before its A");
    slow.get(0).finished = true;
    for (CompletableFuture<Void> f : futures) {
      f.get(10, TimeUnit.SECONDS);
    }
    for (int r = 0; r < 2; r++) {
      assertEquals(2, aValues.get(r).getInt(0), "rank " + r + "'s A");
      assertEquals(200, bValues.get(r).getInt(0), "rank " + r + "'s B");
    }
  }

  /** It takes part as closed (with two ranks, see CloseWithCollectivesTest): every rank fails it, naming this one. */
  @Test
  void closingFailsACollectiveTheQueueHasNotRunAndItsLateRunChangesNothing() {
    InProcessCommunicator.World world = new InProcessCommunicator.World(1, 20_000);
    StreamOrderedMessages m = helper(world, 0);
    QueuedOperation c = m.allReduceOnQueue(1, Datatype.INT, ReduceOp.SUM);
    c.enqueued(new Step());
    m.close();
    CompletionException e = assertThrows(CompletionException.class, () -> c.future().join());
    assertTrue(e.getCause().getMessage().contains("rank 0's helper was closed before the collective started"),
        e.getCause().getMessage());
    ByteBuffer device = ints(5);
    c.run(device); // returns at once: the progress thread ran it as closed, and nothing waits for it
    assertEquals(5, device.getInt(0));
  }

  @Test
  void messagesRunByTheQueueMeetMessagesOfTheProgressThread() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 20_000);
    StreamOrderedMessages zero = helper(world, 0);
    StreamOrderedMessages one = helper(world, 1);
    // rank 0 sends two messages from its queue; rank 1 receives the first on its queue, the second through its
    // progress thread (behind a gate); then rank 1 sends back from its queue to a receive on rank 0's queue
    QueuedOperation s1 = zero.sendOnQueue(8, 1, 5);
    QueuedOperation s2 = zero.sendOnQueue(8, 1, 5);
    QueuedOperation r1 = one.receiveOnQueue(8, 0, 5);
    ByteBuffer staging = one.staging(8);
    Gate gate = new Gate();
    Step written = new Step();
    written.finished = true;
    CompletableFuture<Void> r2 = one.receive(staging, 0, 5, gate, written);
    for (QueuedOperation q : List.of(s1, s2, r1)) {
      q.enqueued(new Step());
    }
    ByteBuffer into = ints(0, 0);
    Thread receiver = runOnQueue(r1, into); // waits on rank 1's queue until the message is there
    Thread.sleep(100);
    assertTrue(receiver.isAlive(), "the queue's receive waits for its message");
    s1.run(ints(11, 12)); // the queue reaches the sends in order; its buffer may change once run returns
    s2.run(ints(21, 22));
    receiver.join(10_000);
    assertFalse(receiver.isAlive());
    s1.future().get(10, TimeUnit.SECONDS);
    s2.future().get(10, TimeUnit.SECONDS);
    r1.future().get(10, TimeUnit.SECONDS);
    r2.get(10, TimeUnit.SECONDS);
    assertEquals(11, into.getInt(0), "the first message, in the queue's buffer when its command returned");
    assertEquals(12, into.getInt(4));
    assertEquals(21, staging.getInt(0), "the second, through the progress thread");
    assertTrue(gate.opened);
  }

  @Test
  void aReceiveWhoseCommandFailedStillTakesItsMessageThenFails() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 20_000);
    QueuedOperation send = helper(world, 0).sendOnQueue(8, 1, 3);
    QueuedOperation receive = helper(world, 1).receiveOnQueue(8, 0, 3);
    send.enqueued(new Step());
    receive.enqueueFailed(new DeviceFailure("clEnqueueNativeKernel failed", -5));
    send.run(ints(1, 2));
    send.future().get(10, TimeUnit.SECONDS); // the sender completes: its message was received
    CompletionException e = assertThrows(CompletionException.class, () -> receive.future().join());
    assertTrue(e.getCause().getMessage().contains("its command on the device's queue failed"),
        e.getCause().getMessage());
  }

  @Test
  void closingWhileTheQueueWaitsForAMessageReleasesTheQueue() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 20_000);
    StreamOrderedMessages m = helper(world, 1);
    QueuedOperation r = m.receiveOnQueue(8, 0, 3);
    r.enqueued(new Step());
    ByteBuffer into = ints(7, 7);
    Thread worker = runOnQueue(r, into); // rank 0 never sends
    Thread.sleep(100);
    m.close();
    worker.join(10_000);
    assertFalse(worker.isAlive(), "the queue's thread returned once the helper closed");
    CompletionException e = assertThrows(CompletionException.class, () -> r.future().join());
    assertTrue(e.getCause().getMessage().contains("closed"), e.getCause().getMessage());
    assertEquals(7, into.getInt(0));
  }

  /** The progress thread, idle and parked for good, still sweeps a failed command of the queue's. */
  @Test
  void aFailedCommandIsFoundEvenWhenTheProgressThreadHadNothingToDo() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 20_000);
    StreamOrderedMessages zero = helper(world, 0);
    StreamOrderedMessages one = helper(world, 1);
    Thread.sleep(200); // both progress threads park with nothing to do
    QueuedOperation ok = zero.allReduceOnQueue(1, Datatype.INT, ReduceOp.SUM);
    QueuedOperation never = one.allReduceOnQueue(1, Datatype.INT, ReduceOp.SUM);
    ok.enqueued(new Step());
    Step failed = new Step();
    failed.error = new DeviceFailure("a command before it failed", -5);
    never.enqueued(failed);
    runOnQueue(ok, ints(1));
    CompletionException e = assertThrows(CompletionException.class,
        () -> never.future().orTimeout(5, TimeUnit.SECONDS).join());
    assertTrue(e.getCause().getMessage().contains("rank 1's device work before it failed"), e.getCause().getMessage());
  }

  /** A send that MPI has not completed at once goes to the progress thread, which fails it on close. */
  @Test
  void closingFailsASendTheQueueHandedToTheProgressThread() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 20_000);
    // a send that MPI never completes (a rendezvous whose receiver never comes)
    org.mpibuild.spi.Communicator comm = new org.mpibuild.spi.ForwardingCommunicator(world.rank(0)) {
      @Override
      public Request iSend(ByteBuffer buffer, int dest, int tag) {
        return new Request() {
          @Override
          public boolean test() {
            return false;
          }

          @Override
          public void await() {
            throw new AssertionError("never waited for");
          }
        };
      }
    };
    StreamOrderedMessages m = new StreamOrderedMessages(comm, "never-completing sends");
    helpers.add(m);
    QueuedOperation send = m.sendOnQueue(8, 1, 4);
    send.enqueued(new Step());
    send.run(ints(1, 2)); // rank 1 never receives: the send stays in flight
    assertFalse(send.future().isDone());
    m.close();
    CompletionException e = assertThrows(CompletionException.class,
        () -> send.future().orTimeout(5, TimeUnit.SECONDS).join());
    assertTrue(e.getCause().getMessage().contains("closed"), e.getCause().getMessage());
  }

  /** The queue may finish an operation before its backend hands the command over: it is released then. */
  @Test
  void aCommandHandedOverAfterItsOperationFinishedIsReleased() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(1, 20_000);
    QueuedOperation op = helper(world, 0).allReduceOnQueue(1, Datatype.INT, ReduceOp.SUM);
    op.run(ints(3));
    op.future().get(5, TimeUnit.SECONDS);
    Step late = new Step();
    op.enqueued(late);
    assertTrue(late.released, "a command handed over after the end is released, not kept for ever");
  }

  /**
   * Receives from one peer with one tag match the messages in the order they were asked for, whichever way each
   * runs: the first, whose command the device refused, is the progress thread's and must not take the message of
   * the second, which the queue runs.
   */
  @Test
  void receivesKeepTheirOrderWhenTheProgressThreadTakesOneOver() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(2, 20_000);
    StreamOrderedMessages zero = helper(world, 0);
    StreamOrderedMessages one = helper(world, 1);
    QueuedOperation first = one.receiveOnQueue(8, 0, 9);
    first.enqueueFailed(new DeviceFailure("clEnqueueNativeKernel failed", -5)); // as QueueMessenger does at once
    QueuedOperation second = one.receiveOnQueue(8, 0, 9);
    second.enqueued(new Step());
    ByteBuffer into = ints(0, 0);
    Thread worker = runOnQueue(second, into);
    Thread.sleep(50);
    QueuedOperation m1 = zero.sendOnQueue(8, 1, 9);
    QueuedOperation m2 = zero.sendOnQueue(8, 1, 9);
    m1.enqueued(new Step());
    m2.enqueued(new Step());
    m1.run(ints(1, 1));
    m2.run(ints(2, 2));
    worker.join(10_000);
    second.future().get(10, TimeUnit.SECONDS);
    assertEquals(2, into.getInt(0), "the second receive has the second message");
    assertThrows(CompletionException.class, () -> first.future().orTimeout(5, TimeUnit.SECONDS).join());
  }
}
