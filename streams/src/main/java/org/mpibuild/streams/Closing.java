package org.mpibuild.streams;

import java.time.Duration;

/**
 * What a close does to the collectives left, on the progress thread and on the device queue's: the outcome of a
 * collective is the same on every rank, so a closing rank does not drop its part. One that has started (its check
 * or its data is in MPI, or its result is being written to the device) goes on to its end, which every rank
 * reaches alike (the other ranks may have completed it already). One not yet started takes part at its turn with
 * "closed" as its status ({@link CollectiveSteps}), without waiting for its device work, so that every rank fails
 * it with one message naming this rank, as for a device failure. Sends and receives fail at once.
 *
 * <p>Every wait is bounded: a collective whose turn has not come within the wait of the close (another helper of
 * this rank on the communicator holds an earlier one), or that has not ended within twice that wait, fails on this
 * rank alone and gives up its turn, as before (the other ranks then reach their deadline, which names this rank).
 * A started collective with a deadline is never cut short: its own deadline ends it. The wait is the deadline, or
 * {@link StreamOrderedMessages#DEFAULT_DEADLINE} where collectives wait for ever.
 */
final class Closing {
  private final OperationTable table;
  private final long waitNanos;
  private final boolean deadlines;

  Closing(OperationTable table, Duration deadline) {
    this.table = table;
    this.deadlines = !deadline.isZero();
    this.waitNanos = (deadlines ? deadline : StreamOrderedMessages.DEFAULT_DEADLINE).toNanos();
  }

  /**
   * Whether a collective left at the close goes on, on the thread that runs it, once the helper is closed: marks
   * one not yet started to take part as closed; false once it is past its bound (the caller fails it then, with
   * {@link #givenUp}).
   */
  boolean goesOn(StreamOp op) {
    if (op.state == StreamOp.State.WAIT_DEVICE) {
      op.closing = true;
    }
    return System.nanoTime() - boundOf(op) < 0;
  }

  /** When a collective left at the close gives up (System.nanoTime), or Long.MAX_VALUE if its deadline ends it. */
  long boundOf(StreamOp op) {
    long closedAt = table.closedAt();
    return switch (op.state) {
      case WAIT_DEVICE -> closedAt + waitNanos;
      case CHECK, NAMES, WAIT_MPI -> deadlines ? Long.MAX_VALUE : closedAt + 2 * waitNanos;
      default -> closedAt + 2 * waitNanos;
    };
  }

  /** Why a collective past its bound fails, on this rank alone. */
  IllegalStateException givenUp(StreamOp op) {
    String waited = (op.state == StreamOp.State.WAIT_DEVICE ? waitNanos : 2 * waitNanos) / 1_000_000 + " ms";
    return new IllegalStateException(op.describe() + " failed: the helper was closed with it in flight, and "
        + (op.state == StreamOp.State.WAIT_DEVICE
            ? "its turn did not come within " + waited + " (an earlier collective of another helper of this rank on "
                + "the communicator had not started); the other ranks reach their deadline, which names this rank"
            : "it did not end within " + waited + " of the close"));
  }

  /**
   * Whether the close has lasted longer than any collective left may (its turn, its deadline, its write): the
   * progress thread then fails what is left, a safety net.
   */
  boolean pastEveryBound() {
    return System.nanoTime() - table.closedAt() > 4 * waitNanos;
  }

  /** How long the close waits for the progress thread at most: past {@link #pastEveryBound}. */
  long joinMillis() {
    return 4 * waitNanos / 1_000_000 + 10_000;
  }
}
