package org.mpibuild.internal.comm;

import java.util.function.BooleanSupplier;
import org.mpibuild.spi.Communicator;

/**
 * How a rank waits for MPI. It polls the request for a short spin ({@code MPI_BUILD_SPIN_US}, 1 ms by
 * default); then it sleeps between polls,
 * each sleep a 32nd of the time waited so far (at least 10 us, at most 1 ms). A message on its way is
 * caught by the spin. A rank waiting for another rank's compile soon costs no CPU, so it leaves the cores
 * to the compiles on an oversubscribed node. And no wait overshoots its end by more than about 3% (or
 * 1 ms, or the kernel's timer slack of some 50 us).
 *
 * <p>Open MPI's non-blocking collectives progress only while ranks call MPI, so a sleeping receiver also
 * delays the root's completion: the spin is what keeps a broadcast near MPI's own speed. The spin does
 * not yield the processor: {@code sched_yield} hands the core to whatever else is runnable for a whole time
 * slice (3.5 ms per 1 KiB broadcast, measured at 2 ranks on 2 cores).
 *
 * @param spinNanos how long to poll before the first sleep
 */
public record Backoff(long spinNanos) {
  static final long MIN_SLEEP = 10_000;
  static final long MAX_SLEEP = 1_000_000;

  /** The default spin. */
  public static final int DEFAULT_SPIN_MICROS = 1000;

  public Backoff {
    if (spinNanos < 0) {
      throw new IllegalArgumentException("spin of " + spinNanos + " ns is negative");
    }
  }

  /** Waits until {@code request} completes. */
  public void await(Communicator.Request request) {
    await(request, () -> false);
  }

  /**
   * Waits until {@code request} completes; between polls, runs {@code work} (a bounded step that returns
   * whether it did anything) before it spins or sleeps, so that a receiver checks what has arrived while
   * the rest arrives.
   */
  public void await(Communicator.Request request, BooleanSupplier work) {
    Pause pause = start();
    while (!request.test()) {
      if (!work.getAsBoolean()) {
        pause.pause(request);
      }
    }
  }

  /** Starts a wait whose loop tests for itself. */
  public Pause start() {
    return new Pause(System.nanoTime());
  }

  /** One wait in progress. */
  public final class Pause {
    private final long start;

    private Pause(long start) {
      this.start = start;
    }

    /**
     * Spins once or sleeps once, according to how long this wait has lasted; a sleep ends early if the
     * binding can tell that {@code request} completed.
     */
    public void pause(Communicator.Request request) {
      long waited = System.nanoTime() - start;
      if (waited < spinNanos) {
        Thread.onSpinWait();
      } else {
        request.await(sleepAfter(waited));
      }
    }
  }

  /** The sleep after {@code waitedNanos} of waiting: a 32nd of it, from 10 us to 1 ms. */
  static long sleepAfter(long waitedNanos) {
    return Math.max(MIN_SLEEP, Math.min(MAX_SLEEP, waitedNanos / 32));
  }
}
