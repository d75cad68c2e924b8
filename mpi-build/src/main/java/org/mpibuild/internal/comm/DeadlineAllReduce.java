package org.mpibuild.internal.comm;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.mpibuild.spi.Communicator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The first collective of a call, with a deadline: a non-blocking all-reduce waited for without spinning,
 * while each rank tells rank 0 it has arrived (a one-byte message on the library's own communicator), so
 * that rank 0 can name the ranks that never came. Warnings say who is awaited at intervals; past the
 * deadline the job is aborted with a message naming the absent ranks, since MPI cannot cancel a collective
 * that some ranks have entered.
 */
public final class DeadlineAllReduce {
  private static final Logger log = LoggerFactory.getLogger(DeadlineAllReduce.class);
  /** The tag of arrival messages, on the library's duplicate communicator only. */
  static final int TAG = 0x4d42;
  /** Exit code of an abort for absent ranks. */
  static final int ABORT_CODE = 4;

  private DeadlineAllReduce() {}

  /**
   * Returns the element-wise maximum of {@code values} over all ranks, waiting at most {@code deadline}
   * (zero: for ever) for every rank to enter. Collective. Every rank makes the same MPI calls whatever its
   * deadline (the arrival messages and one non-blocking all-reduce), and waits without spinning once
   * {@link Backoff}'s short spin is over, with a deadline or without.
   *
   * @param what the call being entered, for messages: "the build of [saxpy]"
   */
  public static int[] allReduceMax(Communicator comm, int[] values, Duration deadline, Backoff waiting,
      Supplier<String> what) {
    if (comm.size() == 1) {
      return comm.allReduceMax(values);
    }
    boolean forever = deadline.isZero();
    List<Communicator.Request> arrivals = announce(comm);
    int[] result = new int[values.length];
    Communicator.Request all = comm.iAllReduceMax(values, result);
    long start = System.nanoTime();
    long interval = forever ? Duration.ofSeconds(60).toNanos()
        : Math.min(Duration.ofSeconds(60).toNanos(), Math.max(deadline.toNanos() / 3, 1));
    long nextWarning = start + interval;
    // Rank 0 aborts at the deadline with the names; the others give it a grace period to do so.
    long end = start + deadline.toNanos() + (comm.rank() == 0 ? 0 : Math.max(5_000_000_000L, deadline.toNanos() / 10));
    Backoff.Pause pause = waiting.start();
    while (!all.test()) {
      long now = System.nanoTime();
      if (!forever && now - end > 0) {
        comm.abort(abortMessage(comm, arrivals, deadline, what.get()), ABORT_CODE);
        throw new IllegalStateException("aborted: ranks did not enter " + what.get()); // abort returned (tests)
      }
      if (now - nextWarning > 0) {
        log.warn("waiting {} s for {} to enter {}", (now - start) / 1_000_000_000L, awaited(comm, arrivals),
            what.get());
        nextWarning = now + interval;
      }
      pause.pause(all);
    }
    awaitAll(arrivals);
    return result;
  }

  /**
   * Every rank but 0 sends its arrival; rank 0 receives them. Empty when the binding carries no messages,
   * whether it says so at once or when the request is tested (a call posted for the program's thread).
   */
  private static List<Communicator.Request> announce(Communicator comm) {
    List<Communicator.Request> out = new ArrayList<>();
    try {
      if (comm.rank() != 0) {
        out.add(comm.iSend(ByteBuffer.allocateDirect(1), 0, TAG));
      } else {
        for (int r = 1; r < comm.size(); r++) {
          out.add(comm.iReceive(ByteBuffer.allocateDirect(1), r, TAG));
        }
      }
    } catch (UnsupportedOperationException e) {
      out.clear(); // a binding without point-to-point messages: absent ranks go unnamed
    }
    return out;
  }

  /** Whether arrival {@code i} completed; a binding without messages empties the list (see {@link #announce}). */
  private static boolean arrived(List<Communicator.Request> arrivals, int i) {
    try {
      return arrivals.get(i).test();
    } catch (UnsupportedOperationException e) {
      arrivals.clear();
      return true;
    }
  }

  /** Completes every arrival: once the all-reduce is done, every rank has sent its message. */
  private static void awaitAll(List<Communicator.Request> arrivals) {
    try {
      arrivals.forEach(Communicator.Request::await);
    } catch (UnsupportedOperationException e) {
      arrivals.clear();
    }
  }

  /** "ranks [3, 7]" on rank 0 when it can tell, else "the other ranks". */
  private static String awaited(Communicator comm, List<Communicator.Request> arrivals) {
    List<Integer> absent = new ArrayList<>();
    for (int i = 0; comm.rank() == 0 && i < arrivals.size(); i++) {
      if (!arrived(arrivals, i)) {
        absent.add(i + 1);
      }
    }
    if (comm.rank() != 0 || arrivals.isEmpty()) {
      return "the other ranks";
    }
    return "ranks " + absent;
  }

  private static String abortMessage(Communicator comm, List<Communicator.Request> arrivals, Duration deadline,
      String what) {
    String within = " within " + deadline.toSeconds() + " s (MPI_BUILD_COLLECTIVE_TIMEOUT; 'off' waits for ever)";
    if (comm.rank() == 0 && !arrivals.isEmpty()) {
      return "mpi-build: " + awaited(comm, arrivals) + " of " + comm.size() + " did not enter " + what + within
          + "; aborting the job, since MPI cannot cancel a collective that other ranks have entered";
    }
    return "mpi-build: rank " + comm.rank() + ": " + awaited(comm, arrivals) + " did not all enter " + what + within
        + (comm.rank() == 0 ? "" : "; rank 0, which names the absent ranks, did not report: it may be absent itself")
        + "; aborting the job";
  }
}
