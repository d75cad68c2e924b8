package org.mpibuild.streams;

/**
 * The operations that the device's queue runs itself ({@link QueuedOperation}) whose command failed, or was never
 * enqueued: found by the progress thread's sweep, or told by the backend, and taken over by the progress thread,
 * which takes part with the failure, from a staging buffer, so that every rank ends with it.
 */
final class FailedCommands {
  private final OperationTable table;
  private final StagingPool pool;

  FailedCommands(OperationTable table, StagingPool pool) {
    this.table = table;
    this.pool = pool;
  }

  /**
   * Asks the earliest operation of the queue's that has not started running whether its command failed (a
   * command before it failed, so the device fails it too), or completed without running it: then the progress
   * thread takes it over. Only that one: the queue is in order, so a later command cannot fail before it.
   */
  void sweep() {
    StreamOp next = table.firstUnclaimedOnQueue();
    if (next == null) {
      return;
    }
    RuntimeException failed = null;
    synchronized (next) {
      if (next.driver == StreamOp.NOBODY && next.command != null) {
        try {
          if (next.command.finished()) {
            // the command claims its operation first thing: complete without it, it failed inside (logged)
            failed = new IllegalStateException("its command on the device's queue completed without running it");
          }
        } catch (RuntimeException e) {
          failed = e;
        }
      }
    }
    if (failed != null) {
      takeOver(next, failed);
    }
  }

  /**
   * The progress thread takes over an operation of the queue's whose command failed or was never enqueued, unless
   * the queue's thread has claimed it: a send fails (nothing was sent), a receive receives the message (so that its
   * sender completes) and then fails, a collective takes part with the failure.
   */
  void takeOver(StreamOp op, RuntimeException why) {
    if (!op.claim(StreamOp.PROGRESS)) {
      return; // the queue's thread runs it after all
    }
    op.localFailure = why;
    if (op.kind == StreamOp.Kind.SEND) {
      table.fail(op, new IllegalStateException(op.describe() + " failed: its command on the device's queue failed: "
          + why.getMessage(), why)); // nothing was sent: as when a send's read fails
      return;
    }
    if (op.kind == StreamOp.Kind.RECEIVE) {
      op.state = StreamOp.State.WAIT_MPI; // receives the message, so that its sender completes, then fails
    }
    if (op.kind == StreamOp.Kind.ALL_REDUCE) {
      op.staging = pool.take(op.count * op.type.bytes());
      op.receive = op.staging;
    }
    table.handOver(op);
  }
}
