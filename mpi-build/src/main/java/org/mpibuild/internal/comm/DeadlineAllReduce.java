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
 * The first collective of a call, with a deadline on entering it: a non-blocking all-reduce waited for
 * without spinning, while each rank tells rank 0 it has arrived and rank 0 tells every rank (one-byte
 * messages on the library's own communicator), so that rank 0 can name the ranks that never came. The
 * deadline covers entering only: past it, rank 0 aborts the job naming the ranks that never arrived (MPI
 * cannot cancel a collective that some ranks have entered), and any other rank does so, later, if rank 0
 * itself never arrived. Once every rank has arrived, the all-reduce is waited for as long as it takes, with a
 * warning at intervals: a rank that has entered makes its own progress, or, in caller mode, makes it when its
 * program next touches the library ({@code progress()}, a future's {@code isDone()} or {@code get()}).
 */
public final class DeadlineAllReduce {
  private static final Logger log = LoggerFactory.getLogger(DeadlineAllReduce.class);
  /** The tag of arrival messages, on the library's duplicate communicator only. */
  static final int TAG = 0x4d42;
  /** Exit code of an abort for absent ranks. */
  static final int ABORT_CODE = 4;

  private DeadlineAllReduce() {}

  /**
   * A communicator on which this rank may have announced its arrival at its next call before that call
   * began (an asynchronous build in caller mode announces it on the program's thread when it is started).
   */
  public interface Announcing {
    /** The arrival announced ahead for the next call, taken; null if none was. */
    Arrivals takeArrivals();
  }

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
    Arrivals ahead = comm instanceof Announcing a ? a.takeArrivals() : null;
    Arrivals arrivals = ahead != null ? ahead : announce(comm);
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
      if (!forever && now - end > 0 && !arrivals.allCame()) {
        comm.abort(arrivals.abortMessage(deadline, what.get()), ABORT_CODE);
        throw new IllegalStateException("aborted: ranks did not enter " + what.get()); // abort returned (tests)
      }
      if (now - nextWarning > 0) {
        warn(arrivals, (now - start) / 1_000_000_000L, what.get());
        nextWarning = now + interval;
      }
      pause.pause(all);
    }
    arrivals.awaitAll();
    return result;
  }

  private static void warn(Arrivals arrivals, long seconds, String what) {
    if (arrivals.allCame()) {
      log.warn("every rank has entered {}; waiting {} s for the ranks to complete it (in caller mode, a rank moves "
          + "its builds on only in progress(), a future's isDone() or get())", what, seconds);
    } else {
      log.warn("waiting {} s for {} to enter {}", seconds, arrivals.awaited(), what);
    }
  }

  /**
   * Starts this rank's arrival messages for its next call on {@code comm}, on the calling thread: every rank but
   * 0 sends its arrival to rank 0 and receives rank 0's; rank 0 receives every rank's and sends its own to each.
   * For {@link Announcing} communicators, which hand the result to that call.
   */
  public static Arrivals announce(Communicator comm) {
    Arrivals out = new Arrivals(comm);
    try {
      if (comm.rank() != 0) {
        out.sent.add(comm.iSend(ByteBuffer.allocateDirect(1), 0, TAG));
        out.came.add(comm.iReceive(ByteBuffer.allocateDirect(1), 0, TAG));
      } else {
        for (int r = 1; r < comm.size(); r++) {
          out.came.add(comm.iReceive(ByteBuffer.allocateDirect(1), r, TAG));
        }
        for (int r = 1; r < comm.size(); r++) {
          out.sent.add(comm.iSend(ByteBuffer.allocateDirect(1), r, TAG));
        }
      }
    } catch (UnsupportedOperationException e) {
      out.unsupported(); // a binding without point-to-point messages: absent ranks go unnamed
    }
    return out;
  }

  /**
   * One rank's arrival messages for one call: on rank 0, those it receives from ranks 1 to N-1 (in order);
   * elsewhere, the one it receives from rank 0. Empty when the binding carries no messages, whether it says so
   * at once or when a request is tested (a call posted for the program's thread).
   */
  public static final class Arrivals {
    private final Communicator comm;
    private final List<Communicator.Request> came = new ArrayList<>();
    private final List<Communicator.Request> sent = new ArrayList<>();
    private boolean supported = true;

    private Arrivals(Communicator comm) {
      this.comm = comm;
    }

    private void unsupported() {
      supported = false;
      came.clear();
      sent.clear();
    }

    /** Whether message {@code i} arrived. */
    private boolean arrived(int i) {
      try {
        return came.get(i).test();
      } catch (UnsupportedOperationException e) {
        unsupported();
        return false;
      }
    }

    /** Whether every message this rank awaits has come: then the ranks it watches have all entered. */
    boolean allCame() {
      for (int i = 0; supported && i < came.size(); i++) {
        if (!arrived(i)) {
          return false;
        }
      }
      return supported;
    }

    /** Completes every message: once the all-reduce is done, every rank has sent its own. */
    void awaitAll() {
      try {
        came.forEach(Communicator.Request::await);
        sent.forEach(Communicator.Request::await);
      } catch (UnsupportedOperationException e) {
        unsupported();
      }
    }

    /** "ranks [3, 7]" on rank 0 when it can tell; "rank 0" elsewhere, if it did not come; else "the other ranks". */
    String awaited() {
      List<Integer> absent = new ArrayList<>();
      for (int i = 0; i < came.size(); i++) {
        if (!arrived(i)) {
          absent.add(comm.rank() == 0 ? i + 1 : 0);
        }
      }
      if (!supported || absent.isEmpty()) {
        return "the other ranks";
      }
      return comm.rank() == 0 ? "ranks " + absent : "rank 0";
    }

    String abortMessage(Duration deadline, String what) {
      String within = " within " + deadline.toSeconds() + " s (MPI_BUILD_COLLECTIVE_TIMEOUT; 'off' waits for ever)";
      String awaited = awaited();
      if (comm.rank() == 0 && supported) {
        return "mpi-build: " + awaited + " of " + comm.size() + " did not enter " + what + within
            + "; aborting the job, since MPI cannot cancel a collective that other ranks have entered";
      }
      if (supported) {
        return "mpi-build: rank " + comm.rank() + ": rank 0 did not enter " + what + within
            + " (it names the absent ranks, so it may be absent itself); aborting the job";
      }
      return "mpi-build: rank " + comm.rank() + ": " + awaited + " did not all enter " + what + within
          + (comm.rank() == 0 ? "" : "; rank 0, which names the absent ranks, did not report: it may be absent itself")
          + "; aborting the job";
    }
  }
}
