package org.mpibuild.streams;

/**
 * How long the progress thread waits after a pass over its operations, from what the pass saw: a short spin
 * right after progress (MPI moves only when tested), then parks that grow, capped by what is awaited, never past
 * a collective's deadline; and every {@link #SWEEP_MILLIS} ms a pass that asks every device step. Time is given
 * ({@code System.nanoTime}), so that tests need not sleep.
 */
final class ParkPolicy {
  /** How long the progress thread spins, testing MPI, after something moved, before it parks. */
  static final long SPIN_NANOS = 20_000;
  /** The longest park while MPI operations are in flight (MPI moves only when tested). */
  static final long MPI_PARK_NANOS = 100_000;
  /**
   * How long nothing must have moved, point-to-point messages in flight and no collective, before the progress
   * thread's park may grow past {@link #MPI_PARK_NANOS} to {@link #POLL_PARK_NANOS}: a receive whose sender is
   * busy with a long kernel is then tested a thousand times a second instead of ten thousand, which leaves the
   * cores to the device (a CPU device shares them): a receive has no device step before it (it starts in
   * {@code WAIT_MPI}), only its gate, which the device reaches unannounced, so the thread does not know whether
   * the device still has work before that gate. A collective, whose rounds advance only when tested, keeps the
   * short parks, and so does an operation that the device's queue runs itself, which the queue is known to be
   * stalled on ({@link QueueRuns}).
   */
  static final long MPI_IDLE_NANOS = 20_000_000;
  /** The longest park while device work that cannot wake the thread is awaited. */
  static final long POLL_PARK_NANOS = 1_000_000;
  /** How often the progress thread asks every device step, woken or not (a safety net). */
  static final int SWEEP_MILLIS = 20;
  /** The longest park while only device work that wakes the thread is awaited (a safety net). */
  static final long WOKEN_PARK_NANOS = SWEEP_MILLIS * 1_000_000L;
  /** The first park after progress. */
  static final long FIRST_PARK_NANOS = 2_000;

  /** {@link #next}: something moved, pass again at once. */
  static final long AGAIN = 0;
  /** {@link #next}: spin once ({@link Thread#onSpinWait}), then pass again. */
  static final long SPIN = -1;
  /** {@link #next}: nothing is in flight; park until woken. */
  static final long UNTIL_WOKEN = Long.MAX_VALUE;

  private long sleep = FIRST_PARK_NANOS;
  private long spinUntil;
  private long lastSweep;
  private long lastMoved;

  /** A policy whose thread starts at {@code now}. */
  ParkPolicy(long now) {
    this.lastSweep = now;
    this.lastMoved = now;
  }

  /** Whether the pass starting at {@code now} asks every device step: every {@link #SWEEP_MILLIS} ms. */
  boolean sweepDue(long now) {
    if (now - lastSweep >= WOKEN_PARK_NANOS) {
      lastSweep = now;
      return true;
    }
    return false;
  }

  /**
   * What the thread does after {@code pass}, which ended at {@code now}.
   *
   * @return {@link #AGAIN}, {@link #SPIN}, {@link #UNTIL_WOKEN}, or how many nanoseconds to park
   */
  long next(ProgressPass pass, long now) {
    if (pass.moved) {
      lastMoved = now;
      sleep = FIRST_PARK_NANOS;
      spinUntil = now + SPIN_NANOS;
      return AGAIN;
    }
    if (pass.mpi && now - spinUntil < 0) {
      return SPIN; // MPI moves only when tested: a short spin right after progress
    }
    long cap = !pass.any ? Long.MAX_VALUE
        : pass.mpi ? (!pass.collectiveMpi && now - lastMoved > MPI_IDLE_NANOS ? POLL_PARK_NANOS : MPI_PARK_NANOS)
        : pass.polledDevice ? POLL_PARK_NANOS : WOKEN_PARK_NANOS;
    long park = Math.min(sleep, cap);
    if (pass.nextDeadline != Long.MAX_VALUE) {
      park = Math.max(1_000, Math.min(park, pass.nextDeadline - now));
    }
    // Idle waits grow: short against kernels and messages, long enough to leave the cores to the device
    // (a CPU device shares them); device work that completes wakes the thread at once.
    sleep = Math.min(sleep * 2, cap == Long.MAX_VALUE ? WOKEN_PARK_NANOS : cap);
    return pass.any ? park : UNTIL_WOKEN;
  }
}
