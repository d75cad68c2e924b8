package org.mpibuild.streams;

import static org.mpibuild.streams.TestBuffers.ints;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
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
 * Issue 44, item 9: a rank that closes its helper with a collective left ends it the same way as every other rank
 * (two in-process ranks, device steps held or finished by the test). Before, the closing rank failed its own
 * future at once while the other rank's all-reduce reported success, or waited for it until its deadline and
 * aborted the job.
 */
class CloseWithCollectivesTest {
  /** Long enough never to be reached by a passing test; short enough to end a failing one. */
  private static final Duration DEADLINE = Duration.ofSeconds(3);

  private final InProcessCommunicator.World world = new InProcessCommunicator.World(2, 20_000);
  private final List<StreamOrderedMessages> helpers = new ArrayList<>();

  @AfterEach
  void closeAll() {
    helpers.forEach(StreamOrderedMessages::close);
  }

  private StreamOrderedMessages helper(int rank) {
    StreamOrderedMessages m = new StreamOrderedMessages(world.rank(rank), "rank " + rank, DEADLINE,
        code -> "error " + code);
    helpers.add(m);
    return m;
  }

  private static Step step(boolean finished) {
    Step s = new Step();
    s.finished = finished;
    return s;
  }

  /** Closes on a thread of its own: a close waits for the collectives left, which this test may still hold. */
  private static Thread closeOnAThread(StreamOrderedMessages m) {
    Thread t = new Thread(m::close, "close");
    t.start();
    return t;
  }

  /** Waits until {@code rank} has started a collective's check (an all-reduce of longs, the first it calls). */
  private void checkStarted(int rank) throws InterruptedException {
    StreamOrderedMessagesTest.eventually("rank " + rank + " started its check", () -> world.calls().stream()
        .anyMatch(c -> c.rank() == rank && c.operation().startsWith("allReduce(LONG")));
  }

  private static String failure(CompletableFuture<Void> f) {
    CompletionException e = assertThrows(CompletionException.class, () -> f.orTimeout(15, TimeUnit.SECONDS).join());
    return e.getCause().getMessage();
  }

  /**
   * Rank 1 closes before its all-reduce started (its device work not finished): it takes part at its turn with
   * "closed", so both ranks fail at once with one message naming it; no abort, no gate left shut, the buffers keep
   * their values.
   */
  @Test
  void aCollectiveNotYetStartedFailsOnEveryRankNamingTheRankThatClosed() throws Exception {
    ByteBuffer[] values = {ints(1, 2), ints(10, 20)};
    Gate[] gates = {new Gate(), new Gate()};
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    for (int r = 0; r < 2; r++) {
      futures.add(helper(r).allReduce(values[r], values[r], 2, Datatype.INT, ReduceOp.SUM, step(r == 0), gates[r],
          step(true)));
    }
    Thread.sleep(100); // rank 0 waits in its check for rank 1, whose device work is not done
    long t0 = System.nanoTime();
    helpers.get(1).close();
    String[] messages = {failure(futures.get(0)), failure(futures.get(1))};
    assertTrue(System.nanoTime() - t0 < DEADLINE.toNanos() / 2, "at once, not at the deadline");
    assertEquals(messages[0], messages[1], "one message on every rank");
    assertEquals("all-reduce (SUM of 2 INT) (collective #0) failed: rank 1's helper was closed before the collective "
        + "started; every rank's buffer keeps its own values", messages[0]);
    assertNull(world.abortMessage(), "nobody aborts: every rank knows why");
    for (int r = 0; r < 2; r++) {
      assertTrue(gates[r].failed && !gates[r].opened, "rank " + r + "'s gate is released, failed");
      assertEquals(r == 0 ? 1 : 10, values[r].getInt(0), "rank " + r + "'s buffer keeps its values");
    }
  }

  /**
   * Rank 1 closes while its all-reduce waits in MPI for rank 0 (rank 1 has started it, rank 0's device work is not
   * done): the close lets it end, and both ranks get the sum.
   */
  @Test
  void aCollectiveStartedBeforeTheCloseEndsOnEveryRankAsIfNoneHadClosed() throws Exception {
    ByteBuffer[] values = {ints(1, 2), ints(10, 20)};
    Step held = step(false);
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    for (int r = 0; r < 2; r++) {
      futures.add(helper(r).allReduce(values[r], values[r], 2, Datatype.INT, ReduceOp.SUM, r == 0 ? held : step(true),
          new Gate(), step(true)));
    }
    checkStarted(1); // and waits for rank 0
    Thread closing = closeOnAThread(helpers.get(1));
    Thread.sleep(100);
    held.finished = true;
    for (int r = 0; r < 2; r++) {
      futures.get(r).get(15, TimeUnit.SECONDS);
      assertEquals(11, values[r].getInt(0), "rank " + r);
      assertEquals(22, values[r].getInt(4), "rank " + r);
    }
    closing.join(15_000);
    assertFalse(closing.isAlive(), "the close returned once its collective had ended");
    assertNull(world.abortMessage());
  }

  /**
   * The probe's case: rank 1 closes once the all-reduce has completed in MPI on every rank, while its result is
   * being written to its device. Rank 0 succeeded; so does rank 1, once its write has finished.
   */
  @Test
  void aCollectiveCompleteInMpiDeliversTheClosingRanksResult() throws Exception {
    ByteBuffer[] values = {ints(1, 2), ints(10, 20)};
    Step write = step(false);
    Gate gate = new Gate();
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    for (int r = 0; r < 2; r++) {
      futures.add(helper(r).allReduce(values[r], values[r], 2, Datatype.INT, ReduceOp.SUM, step(true),
          r == 1 ? gate : new Gate(), r == 1 ? write : step(true)));
    }
    futures.get(0).get(15, TimeUnit.SECONDS);
    StreamOrderedMessagesTest.eventually("rank 1's gate opened", () -> gate.opened);
    Thread closing = closeOnAThread(helpers.get(1));
    Thread.sleep(100);
    write.finished = true;
    futures.get(1).get(15, TimeUnit.SECONDS);
    assertEquals(11, values[1].getInt(0));
    closing.join(15_000);
    assertFalse(closing.isAlive());
  }

  /** The same as the first, for a broadcast whose root (rank 1) closed: every rank fails, naming it. */
  @Test
  void aBroadcastWhoseRootClosedBeforeItStartedFailsEveryRank() throws Exception {
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    Gate gate = new Gate();
    futures.add(helper(0).broadcast(ByteBuffer.allocateDirect(StreamOrderedMessages.BROADCAST_HEADER + 8), 1, null,
        gate, step(true)));
    futures.add(helper(1).broadcast(ByteBuffer.allocateDirect(StreamOrderedMessages.BROADCAST_HEADER + 8), 1,
        step(false), null, null));
    Thread.sleep(100);
    helpers.get(1).close();
    String[] messages = {failure(futures.get(0)), failure(futures.get(1))};
    assertEquals(messages[0], messages[1]);
    assertTrue(messages[0].startsWith("broadcast of 8 bytes from rank 1 (collective #0) failed: rank 1's helper was "
        + "closed before the collective started"), messages[0]);
    assertTrue(gate.failed && !gate.opened);
    assertNull(world.abortMessage());
  }

  /**
   * On the device's queue: rank 1's queue runs its all-reduce and waits in it for rank 0 when rank 1 closes; the
   * queue's thread lets it end, and both ranks get the sum. A second all-reduce, enqueued on rank 1's queue but not
   * yet reached, takes part as closed: both ranks fail it with one message.
   */
  @Test
  void onTheQueueAStartedCollectiveEndsAndOneNotReachedFailsEveryRank() throws Exception {
    ByteBuffer[] values = {ints(1), ints(10)};
    Step held = step(false);
    StreamOrderedMessages zero = helper(0);
    CompletableFuture<Void> first0 = zero.allReduce(values[0], values[0], 1, Datatype.INT, ReduceOp.SUM, held,
        new Gate(), step(true));
    CompletableFuture<Void> second0 = zero.allReduce(ints(3), ints(0), 1, Datatype.INT, ReduceOp.SUM, step(true),
        new Gate(), step(true));
    StreamOrderedMessages one = helper(1);
    QueuedOperation first1 = one.allReduceOnQueue(1, Datatype.INT, ReduceOp.SUM);
    first1.enqueued(new Step());
    QueuedOperation second1 = one.allReduceOnQueue(1, Datatype.INT, ReduceOp.SUM);
    second1.enqueued(new Step());
    Thread worker = new Thread(() -> first1.run(values[1]), "queue worker");
    worker.start();
    checkStarted(1); // the queue's thread waits in the first all-reduce for rank 0
    Thread closing = closeOnAThread(one);
    Thread.sleep(100);
    held.finished = true;
    first0.get(15, TimeUnit.SECONDS);
    first1.future().get(15, TimeUnit.SECONDS);
    assertEquals(11, values[0].getInt(0));
    assertEquals(11, values[1].getInt(0));
    String[] messages = {failure(second0), failure(second1.future())};
    assertEquals(messages[0], messages[1]);
    assertTrue(messages[0].contains("(collective #1) failed: rank 1's helper was closed before the collective "
        + "started"), messages[0]);
    worker.join(15_000);
    closing.join(15_000);
    assertFalse(worker.isAlive() || closing.isAlive());
    assertNull(world.abortMessage());
  }
}
