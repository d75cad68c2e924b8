package org.mpibuild.streams;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The operations of one helper that have not ended, in the order they were asked for, and how each ends:
 * finished, failed, or handed over from the device's queue to the progress thread. The parts that move
 * operations on (the progress loop, point-to-point and collective steps, the queue's runs) add, list and end
 * operations here, and never through each other.
 *
 * <p>Two lists under one lock: the progress thread's operations, and those that the device's queue runs itself
 * ({@link QueuedOperation}), in queue order, until they end or move to the first: a send that MPI did not
 * complete at once, or an operation whose command failed, which the progress thread takes over.
 */
final class OperationTable {
  private final String name;
  private final CollectiveTickets tickets;
  private final StagingPool pool;
  private final ProgressThread progress;
  private final List<StreamOp> ops = new ArrayList<>();
  private final ArrayDeque<StreamOp> onQueue = new ArrayDeque<>();
  /** The order operations were asked for in, under the lock of {@link #ops}. */
  private long nextSeq;
  /**
   * Operations that failed, and buffers given up, while MPI or the device may still use them (MPI cannot cancel
   * a started operation; the work behind a failed gate, or enqueued before a failure, still runs): kept
   * reachable, so that the garbage collector never frees memory in use, for as long as the helper is.
   */
  private final List<Object> retained = new ArrayList<>();
  private volatile boolean closed;
  /** When the helper was closed (System.nanoTime), written before {@link #closed}. */
  private volatile long closedAt;

  OperationTable(String name, CollectiveTickets tickets, StagingPool pool, ProgressThread progress) {
    this.name = name;
    this.tickets = tickets;
    this.pool = pool;
    this.progress = progress;
  }

  /**
   * Adds an operation in its place in the order, with its ticket if it is a collective, and wakes the progress
   * thread where it has something new to do.
   *
   * @throws IllegalStateException if the helper was closed (its staging buffers are then given up)
   */
  CompletableFuture<Void> add(StreamOp op) {
    // Only the step before an operation may wake the thread: what waits for it is this thread. The write after
    // is polled, since a driver's callback may run on the thread that would start the work queued behind that
    // write (PoCL runs it there, and JOCL attaches that thread to the JVM and detaches it again for each call),
    // which would delay the program's own work.
    if (op.before != null) {
      op.beforeWakes = op.before.wakeWhenFinished(() -> {
        op.beforeSignalled = true;
        progress.wake();
      });
    }
    synchronized (ops) {
      if (closed) {
        discard(op.staging); // device work for it may be enqueued
        discard(op.receive);
        throw new IllegalStateException("stream-ordered messages on " + name + ": they were closed");
      }
      if (op.collective()) {
        op.ticket = tickets.take(); // taken with the list's lock: one helper's collectives keep their order
      }
      op.seq = nextSeq++;
      if (op.onQueue) {
        onQueue.addLast(op);
        if (onQueue.size() > 1) {
          return op.future; // the progress thread already sweeps the queue's operations
        }
        // else it may be parked for good (it had nothing to do): from now on it sweeps every SWEEP_MILLIS
      } else {
        ops.add(op);
      }
    }
    progress.wake();
    return op.future;
  }

  /** The progress thread's operations, in order; notes in {@code pass} whether any operation has not ended. */
  List<StreamOp> snapshot(ProgressPass pass) {
    synchronized (ops) {
      List<StreamOp> snapshot = new ArrayList<>(ops);
      pass.any = !snapshot.isEmpty() || !onQueue.isEmpty();
      return snapshot;
    }
  }

  /** Every operation that has not ended, the progress thread's first. */
  List<StreamOp> all() {
    synchronized (ops) {
      List<StreamOp> all = new ArrayList<>(ops);
      all.addAll(onQueue);
      return all;
    }
  }

  /** The number of operations that have not ended. */
  int inFlight() {
    synchronized (ops) {
      return ops.size() + onQueue.size();
    }
  }

  /**
   * Whether a receive asked for before {@code op} has not been posted yet, whichever way it runs: {@code op}, a
   * receive, then waits, so that receives from one peer with one tag match messages in the order they were asked
   * for. On the queue, an earlier receive not yet posted is one whose command failed: the progress thread takes
   * it over within a sweep and posts it.
   */
  boolean earlierReceiveUnposted(StreamOp op) {
    synchronized (ops) {
      for (StreamOp q : onQueue) {
        if (q.seq >= op.seq) {
          break;
        }
        if (q.kind == StreamOp.Kind.RECEIVE && q.request == null) {
          return true;
        }
      }
      for (StreamOp p : ops) {
        if (p.kind == StreamOp.Kind.RECEIVE && p.seq < op.seq && p.request == null) {
          return true;
        }
      }
    }
    return false;
  }

  /** The earliest operation of the queue's that nobody has claimed yet, or null. */
  StreamOp firstUnclaimedOnQueue() {
    synchronized (ops) {
      for (StreamOp op : onQueue) {
        if (op.driver() == StreamOp.NOBODY) {
          return op;
        }
      }
    }
    return null;
  }

  /**
   * Makes an operation of the queue's the progress thread's from now on (close included): it moves to the end of
   * the progress thread's list, and the thread is woken. A helper closed meanwhile, whose thread has gone, fails
   * it here.
   */
  void handOver(StreamOp op) {
    synchronized (ops) {
      synchronized (op) {
        op.driver = StreamOp.PROGRESS;
      }
      if (onQueue.remove(op)) {
        ops.add(op);
      }
    }
    progress.wake();
    if (closed && progress.ended() && !op.future.isDone()) {
      fail(op, new IllegalStateException(op.describe() + " failed: the helper was closed with it in flight"));
    }
  }

  /** Ends an operation that completed: its steps learn so, its staging buffers go back to the pool. */
  void finish(StreamOp op) {
    forget(op);
    op.releaseSteps(true);
    pool.give(op.staging); // neither MPI nor the device touches them any more
    pool.give(op.receive);
    op.future.complete(null);
  }

  /**
   * Ends an operation that failed: its gate fails (an all-reduce's own values put back first), a collective
   * gives back what it holds, and what MPI or the device may still use stays reachable and out of the pool.
   */
  void fail(StreamOp op, RuntimeException why) {
    forget(op);
    boolean gateFails = op.gate != null && op.state != StreamOp.State.WAIT_WRITE;
    boolean started = op.state == StreamOp.State.CHECK || op.state == StreamOp.State.NAMES
        || op.state == StreamOp.State.WAIT_MPI;
    // the device may still fill its staging buffer where its read had not finished (a collective that took part
    // as closed, see Closing)
    if (started && !op.mpiDone || gateFails || op.closing && !op.beforeDone) {
      retain(op);
    }
    if (gateFails) {
      if (op.kind == StreamOp.Kind.ALL_REDUCE && started && op.localFailure == null
          && !(op.closing && !op.beforeDone) && op.receive != op.staging) {
        // the write behind a failed gate may still run (see Gate#fail): it writes back this rank's own values (not
        // where the device has not finished reading them: a collective that took part as closed, see Closing)
        op.receive.duplicate().put(op.staging.duplicate());
      }
      op.gate.fail();
    }
    if (op.collective()) {
      abandon(op);
    }
    op.releaseSteps(false);
    pool.forget(op.staging); // the device work behind a failed gate may still read them
    pool.forget(op.receive);
    op.state = StreamOp.State.DONE;
    op.future.completeExceptionally(why);
  }

  /**
   * What a failing collective gives back: its persistent request (a start still in progress stays MPI's: the
   * next user tests it before its own), its turn if it never started, its in-place copies (MPI may still use
   * them).
   */
  private void abandon(StreamOp op) {
    if (op.entry != null) {
      op.entry.release(op);
      op.entry = null;
    }
    if (op.ticket >= 0 && (op.state == StreamOp.State.WAIT_DEVICE || op.state == StreamOp.State.CHECK
        || op.state == StreamOp.State.NAMES)) {
      tickets.abandon(op.ticket); // never started its data collective: its turn passes on
    }
    pool.forget(op.results);
    pool.forget(op.sent);
    pool.forget(op.statusOut);
    pool.forget(op.statusIn);
    pool.forget(op.arrivalBytes);
  }

  /**
   * Gives up a staging buffer that no operation received, or whose operation failed: never reused, and kept
   * reachable with the helper, since device work enqueued before the failure may use it.
   */
  void discard(ByteBuffer buffer) {
    if (buffer != null) {
      pool.forget(buffer);
      retain(buffer);
    }
  }

  /**
   * Whether the helper was closed: nothing is added any more; sends and receives left fail, collectives left end
   * as {@link Closing} says.
   */
  boolean closed() {
    return closed;
  }

  /** When the helper was closed (System.nanoTime); read only once {@link #closed} says so. */
  long closedAt() {
    return closedAt;
  }

  /**
   * Marks the helper closed.
   *
   * @return whether this call closed it (false if it was closed already)
   */
  boolean close() {
    synchronized (ops) {
      if (closed) {
        return false;
      }
      closedAt = System.nanoTime();
      closed = true;
      return true;
    }
  }

  /** Removes an operation from the lists: a queue's at its head, in the usual case. */
  private void forget(StreamOp op) {
    synchronized (ops) {
      if (!(op.onQueue && onQueue.remove(op))) {
        ops.remove(op);
      }
    }
  }

  /** Keeps what MPI or the device may still use reachable for as long as the helper is. */
  private void retain(Object inUse) {
    synchronized (retained) {
      retained.add(inUse);
    }
  }
}
