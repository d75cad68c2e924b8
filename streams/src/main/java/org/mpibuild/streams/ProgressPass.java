package org.mpibuild.streams;

/**
 * One pass of the progress thread over the operations: what it saw (what the thread waits for, the nearest
 * deadline) and what it learnt of the device's queue on the way.
 */
final class ProgressPass {
  /** Asks every device step, woken or not. */
  final boolean sweep;
  /** An earlier operation's device step before it has not finished: later ones on the queue have not either. */
  boolean beforeBlocked;
  /** An earlier operation's write after it has not finished: later ones on the queue have not either. */
  boolean afterBlocked;
  boolean moved;
  boolean mpi;
  /** A collective's MPI operations are in flight. */
  boolean collectiveMpi;
  boolean polledDevice;
  boolean any;
  long nextDeadline = Long.MAX_VALUE;
  /** An earlier send waits for its data: later sends wait for it, so that sends start in order. */
  boolean sendWaiting;
  /** An earlier receive is not posted yet: later receives wait for it, so that receives are posted in order. */
  boolean receiveUnposted;

  ProgressPass(boolean sweep) {
    this.sweep = sweep;
  }

  /**
   * Whether the operation's device work before it has finished. Only the earliest unfinished step is asked
   * (see {@link DeviceStep}); a step whose device wakes the thread is asked only once its
   * callback has come, or in a pass that sweeps (the safety net against a lost callback). A pass then costs one
   * driver call at most, however many operations are queued.
   */
  boolean beforeFinished(StreamOp op) {
    if (op.beforeDone) {
      return true;
    }
    if (beforeBlocked) {
      return false; // an earlier step on the same queue has not finished, so neither has this one
    }
    if ((!op.beforeWakes || op.beforeSignalled || sweep) && op.before.finished()) {
      op.beforeDone = true;
      return true;
    }
    beforeBlocked = true;
    polledDevice |= !op.beforeWakes;
    return false;
  }

  /** The last step of a receive or a collective: done once the write of the result to the device has finished. */
  void awaitWrite(StreamOp op) {
    if (afterBlocked) {
      return; // an earlier write on the same queue has not finished, so neither has this one
    }
    if (op.after.finished()) {
      op.state = StreamOp.State.DONE;
      moved = true;
    } else {
      afterBlocked = true;
      polledDevice = true;
    }
  }

  /**
   * Notes where {@code op} stands once the pass has moved it on: what later operations of the pass wait for, and
   * what the thread waits for after the pass.
   */
  void saw(StreamOp op) {
    if (op.kind == StreamOp.Kind.SEND && op.state == StreamOp.State.WAIT_DEVICE) {
      sendWaiting = true;
    }
    if (op.kind == StreamOp.Kind.RECEIVE && op.request == null && op.state == StreamOp.State.WAIT_MPI) {
      receiveUnposted = true;
    }
    if (op.state == StreamOp.State.WAIT_MPI || op.state == StreamOp.State.CHECK
        || op.state == StreamOp.State.NAMES) {
      mpi = true;
      collectiveMpi |= op.collective();
    }
  }
}
