package org.mpibuild.streams;

import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.mpibuild.spi.Communicator;

/**
 * What the progress thread runs: passes over the helper's operations, in the order they were asked for, each
 * moved on by its steps (point-to-point or collective), then a wait that {@link ParkPolicy} chooses; until the
 * helper is closed and its collectives have ended as {@link Closing} says, when it fails what is left. It never
 * runs inside a driver callback.
 */
final class ProgressLoop implements Runnable {
  private final Communicator comm;
  private final OperationTable table;
  private final PointToPointSteps pointToPoint;
  private final CollectiveSteps collectives;
  private final FailedCommands failedCommands;
  private final Closing closing;

  ProgressLoop(Communicator comm, OperationTable table, PointToPointSteps pointToPoint, CollectiveSteps collectives,
      FailedCommands failedCommands, Closing closing) {
    this.comm = comm;
    this.table = table;
    this.pointToPoint = pointToPoint;
    this.collectives = collectives;
    this.failedCommands = failedCommands;
    this.closing = closing;
  }

  @Override
  public void run() {
    ParkPolicy parks = new ParkPolicy(System.nanoTime());
    while (!table.closed() || drain()) {
      ProgressPass pass = pass(parks.sweepDue(System.nanoTime()));
      long next = parks.next(pass, System.nanoTime());
      if (next == ParkPolicy.SPIN) {
        Thread.onSpinWait();
      } else if (next == ParkPolicy.UNTIL_WOKEN) {
        LockSupport.park(this); // woken by add and close
      } else if (next != ParkPolicy.AGAIN) {
        LockSupport.parkNanos(this, next);
      }
    }
    failAll();
  }

  /**
   * Once closed, before each pass: fails the sends and receives left, and takes over the collectives of the queue's
   * that it has not reached (they take part as closed). Whether any operation is left, the queue's thread's
   * included; false past the longest wait of the close, as a safety net.
   */
  private boolean drain() {
    List<StreamOp> left = table.all();
    for (StreamOp op : left) {
      if (op.collective()) {
        if (op.onQueue && op.driver() == StreamOp.NOBODY) {
          failedCommands.takeOver(op, new IllegalStateException("the helper was closed before the device's queue "
              + "reached it"));
        }
      } else if (!op.onQueue || op.claim(StreamOp.PROGRESS)) {
        table.fail(op, new IllegalStateException(op.describe() + " failed: the helper was closed with " + left.size()
            + " operation(s) in flight"));
      }
    }
    return table.inFlight() > 0 && !closing.pastEveryBound();
  }

  /** At the end: fails every operation left, but those the queue's thread runs (it fails them itself). */
  private void failAll() {
    List<StreamOp> left = table.all();
    for (StreamOp op : left) {
      if (op.onQueue && !op.claim(StreamOp.PROGRESS)) {
        continue; // the queue's thread is running it: it sees the helper closed and fails it itself
      }
      table.fail(op, new IllegalStateException(op.describe() + " failed: the helper was closed with " + left.size()
          + " operation(s) in flight"));
    }
  }

  /** One pass over the operations, in the order they were asked for; {@code sweep} asks every device step. */
  ProgressPass pass(boolean sweep) {
    if (sweep) {
      failedCommands.sweep();
    }
    ProgressPass pass = new ProgressPass(sweep);
    boolean closed = table.closed();
    for (StreamOp op : table.snapshot(pass)) {
      try {
        if (op.collective() && closed && !closing.goesOn(op)) {
          table.fail(op, closing.givenUp(op));
        } else if (op.collective()) {
          collectives.step(op, pass);
        } else {
          pointToPoint.step(op, pass);
        }
      } catch (RuntimeException | Error e) {
        if (op.state != StreamOp.State.DONE) {
          table.fail(op, new IllegalStateException(op.describe() + " failed: " + e.getMessage(), e));
        }
        pass.moved = true;
      }
      pass.saw(op);
      if (op.collective()) {
        pass.nextDeadline = Math.min(pass.nextDeadline, collectives.deadlineOf(op));
        if (closed) {
          pass.nextDeadline = Math.min(pass.nextDeadline, closing.boundOf(op));
        }
      }
      if (op.state == StreamOp.State.DONE && !op.future.isDone()) {
        end(op);
      }
    }
    return pass;
  }

  /** Ends an operation whose steps are done: it completes, unless its command on the device's queue failed. */
  private void end(StreamOp op) {
    if (op.onQueue && op.localFailure != null) {
      // a broadcast's receiver whose command failed: the others have the data, its device has not
      table.fail(op, new IllegalStateException(op.describe() + " failed on rank " + comm.rank() + ": its command on "
          + "the device's queue failed: " + op.localFailure.getMessage(), op.localFailure));
    } else {
      table.finish(op);
    }
  }
}
