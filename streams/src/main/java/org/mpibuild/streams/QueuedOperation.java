package org.mpibuild.streams;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * An operation that the device's queue runs itself: the backend enqueues a command (an OpenCL native kernel)
 * that calls {@link #run} on the thread that runs the queue's commands, with the device buffer's memory. The
 * operation then happens there, in the queue's order: the work queued before it has finished when it starts,
 * and the work queued after it starts when it returns, with no progress thread, callback or user event in
 * between. A collective takes its ticket, status word, arrivals, deadline and persistent requests exactly as
 * a collective of the progress thread does, so ranks and helpers may mix the two. A send copies the data and
 * starts {@code MPI_Isend}, then returns (the progress thread completes it if MPI has not at once); a receive
 * returns once the message is in the device's memory.
 *
 * <p>Made by {@link StreamOrderedMessages#sendOnQueue}, {@link StreamOrderedMessages#receiveOnQueue},
 * {@link StreamOrderedMessages#broadcastOnQueue} and {@link StreamOrderedMessages#allReduceOnQueue}. If the
 * command never runs (a command before it failed, so the device fails it too), the progress thread finds the
 * failure on its next sweep (at most 20 ms later) and takes part for this rank with the failure, so that every
 * rank ends with it; {@link #enqueueFailed} does the same at once.
 */
public final class QueuedOperation {
  private final StreamOp op;
  private final int bytes;
  private final QueueRuns runs;
  private final FailedCommands failedCommands;

  QueuedOperation(StreamOp op, int bytes, QueueRuns runs, FailedCommands failedCommands) {
    this.op = op;
    this.bytes = bytes;
    this.runs = runs;
    this.failedCommands = failedCommands;
  }

  /**
   * Returns the future of the operation.
   *
   * @return completes when the operation is done (a collective's results or a received message on the device,
   *     a send handed to MPI and completed), often on the thread that ran it, the device's: actions that may
   *     block belong in the {@code *Async} forms; fails as the progress thread's operations do
   */
  public CompletableFuture<Void> future() {
    return op.future;
  }

  /**
   * Hands over the enqueued command, whose failure the progress thread polls until it runs.
   *
   * @param command the command; released by the helper
   */
  public void enqueued(DeviceStep command) {
    synchronized (op) {
      if (!op.stepsReleased) {
        op.command = command;
        command = null;
      }
    }
    if (command != null) {
      command.release(); // the queue ran the operation to its end before the backend handed the command over
    }
  }

  /**
   * Says the command could not be enqueued: the progress thread takes part for this rank with the failure (a
   * collective), receives the message and then fails (a receive), or fails it (a send).
   *
   * @param why the device's refusal
   */
  public void enqueueFailed(RuntimeException why) {
    failedCommands.takeOver(op, why);
  }

  /**
   * Runs the operation on the calling thread, the queue's: returns when a collective or receive is done or has
   * failed, and once a send has copied its data and started. Does nothing if the progress thread took it over
   * first (its command failed, or the helper was closed).
   *
   * @param device the device buffer's memory, at least the operation's bytes; an all-reduce reduces it in
   *     place (MPI works on copies; it keeps its values if the collective fails), a broadcast's root and a send
   *     send from it, the other ranks and a receive receive into it
   */
  public void run(ByteBuffer device) {
    runs.run(op, device, bytes);
  }
}
