package org.mpibuild.streams;

/**
 * Device work the progress thread of {@link StreamOrderedMessages} polls. A helper's steps run on one in-order
 * queue or stream: of the steps before its operations, and of the steps after them, none finishes before the
 * ones enqueued earlier, so the progress thread asks only the earliest unfinished one of each, however many
 * operations are in flight.
 */
public interface DeviceStep {
  /**
   * Returns whether the work has finished. Never blocks.
   *
   * @return true once finished
   * @throws RuntimeException with a message for a person if the device reports an error; a
   *     {@link DeviceFailure} carries the device's error code to the other ranks of a collective
   */
  boolean finished();

  /**
   * Releases what the step holds (events) where the operation may not have completed: it failed or was closed,
   * or the engine no longer needs the step; MPI or the device may still use the operation's buffers. Called
   * once, from any one thread.
   */
  void release();

  /**
   * As {@link #release}, for an operation that completed: neither MPI nor the device uses its buffers any
   * more, so a backend may reuse memory it lent them. Called instead of {@link #release}, once.
   */
  default void releaseCompleted() {
    release();
  }

  /**
   * Asks the device to run {@code wake} once the work has finished or failed (a driver callback that does
   * nothing but that), so that the progress thread need not poll it often. Called once, on the thread that
   * enqueued the work, before the progress thread sees the step, and only for the step before an operation
   * (the one the progress thread waits for); the step after it is polled. By default there is no such
   * callback.
   *
   * @param wake wakes the progress thread; cheap, never blocks, safe from any thread
   * @return whether {@code wake} will run
   */
  default boolean wakeWhenFinished(Runnable wake) {
    return false;
  }
}
