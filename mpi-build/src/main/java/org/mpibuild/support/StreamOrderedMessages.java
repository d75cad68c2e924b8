package org.mpibuild.support;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;
import org.mpibuild.spi.Communicator;

/**
 * The MPI half of stream-ordered send and receive, shared by the backends' helpers (for example
 * {@code org.mpibuild.opencl.QueueMessenger}): a progress thread that starts each MPI message once the
 * device work it depends on has finished, and releases device work that waits for a message once the
 * message has arrived. The device half is given as {@link DeviceStep}s and {@link Gate}s, which the
 * progress thread polls; it never runs inside a driver callback.
 *
 * <p>Order: sends start in the order they were asked for, and so do receives; MPI keeps messages between
 * two ranks with one tag in that order. Every future fails, never hangs, when MPI or the device reports an
 * error, or when the helper is closed with operations in flight (gates are then failed, so the device
 * work queued behind them ends with an error instead of waiting forever).
 *
 * <p>The progress thread calls MPI while the program's threads may too, so MPI must provide
 * {@code MPI_THREAD_MULTIPLE}; {@link #StreamOrderedMessages} checks.
 */
public final class StreamOrderedMessages implements AutoCloseable {
  /** Device work the progress thread polls. */
  public interface DeviceStep {
    /**
     * Returns whether the work has finished. Never blocks.
     *
     * @return true once finished
     * @throws RuntimeException with a message for a person if the device reports an error
     */
    boolean finished();

    /** Releases what the step holds (events). Called once, from the progress thread. */
    void release();
  }

  /** Device work held back until the progress thread opens it. */
  public interface Gate {
    /** Lets the work behind the gate run. */
    void open();

    /** Ends the work behind the gate with an error, so that nothing waits for it forever. */
    void fail();
  }

  private enum State { WAIT_DEVICE, WAIT_MPI, WAIT_WRITE, DONE }

  private final class Op {
    final boolean send;
    final ByteBuffer staging;
    final int peer;
    final int tag;
    final DeviceStep before;
    final Gate gate;
    final DeviceStep after;
    final CompletableFuture<Void> future = new CompletableFuture<>();
    State state;
    Communicator.Request request;

    Op(boolean send, ByteBuffer staging, int peer, int tag, DeviceStep before, Gate gate, DeviceStep after) {
      this.send = send;
      this.staging = staging;
      this.peer = peer;
      this.tag = tag;
      this.before = before;
      this.gate = gate;
      this.after = after;
      this.state = send ? State.WAIT_DEVICE : State.WAIT_MPI;
    }

    String describe() {
      return (send ? "send of " : "receive of ") + staging.remaining() + " bytes " + (send ? "to" : "from") + " rank "
          + peer + " (tag " + tag + ")";
    }
  }

  private final Communicator comm;
  private final String name;
  private final List<Op> ops = new ArrayList<>();
  private final Thread thread;
  private volatile boolean closed;

  /**
   * Starts the progress thread.
   *
   * @param comm the communicator the messages travel on; the caller keeps and closes it
   * @param name for the thread's name and messages, for example the queue
   * @throws IllegalStateException if MPI does not provide MPI_THREAD_MULTIPLE
   */
  public StreamOrderedMessages(Communicator comm, String name) {
    if (comm.threadLevel() != Communicator.ThreadLevel.MULTIPLE) {
      throw new IllegalStateException("stream-ordered messages need MPI_THREAD_MULTIPLE (a progress thread calls "
          + "MPI), but MPI provides MPI_THREAD_" + comm.threadLevel() + ": initialize MPI with "
          + "MPI.InitThread(args, MPI.THREAD_MULTIPLE)");
    }
    this.comm = comm;
    this.name = name;
    this.thread = new Thread(this::run, "mpi-build-stream " + name);
    this.thread.setDaemon(true);
    this.thread.start();
  }

  /**
   * Sends {@code staging} to {@code dest} once {@code filled} has finished (the device copied the data
   * into it behind the work queued before).
   *
   * @param staging the host buffer the message is sent from
   * @param dest the destination rank
   * @param tag the message tag, 0 or more
   * @param filled the device step that fills {@code staging}
   * @return completes when the message is sent and the device buffer may be reused
   */
  public CompletableFuture<Void> send(ByteBuffer staging, int dest, int tag, DeviceStep filled) {
    check(dest, tag);
    return add(new Op(true, staging, dest, tag, filled, null, null));
  }

  /**
   * Receives into {@code staging} from {@code source}, then opens {@code gate}, behind which the device
   * copies {@code staging} to the device buffer; {@code written} finishes when that copy has.
   *
   * @param staging the host buffer the message is received into
   * @param source the source rank
   * @param tag the message tag, 0 or more
   * @param gate opened when {@code staging} holds the message
   * @param written the device step that copies {@code staging} to the device
   * @return completes when the data is on the device
   */
  public CompletableFuture<Void> receive(ByteBuffer staging, int source, int tag, Gate gate, DeviceStep written) {
    check(source, tag);
    return add(new Op(false, staging, source, tag, null, gate, written));
  }

  /**
   * Checks a message size for the backends' helpers, which stage messages in one direct buffer.
   *
   * @param bytes the size asked for
   * @return the size as an int
   * @throws IllegalArgumentException naming the size if it is not 1 to {@code Integer.MAX_VALUE}
   */
  public static int messageBytes(long bytes) {
    if (bytes <= 0 || bytes > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("message size " + bytes + " must be between 1 and " + Integer.MAX_VALUE
          + " bytes");
    }
    return (int) bytes;
  }

  private void check(int peer, int tag) {
    if (peer < 0 || peer >= comm.size()) {
      throw new IllegalArgumentException("rank " + peer + " is out of range for a communicator of " + comm.size()
          + " ranks");
    }
    if (tag < 0) {
      throw new IllegalArgumentException("tag " + tag + " is negative");
    }
  }

  private CompletableFuture<Void> add(Op op) {
    synchronized (ops) {
      if (closed) {
        throw new IllegalStateException("stream-ordered messages on " + name + ": they were closed");
      }
      ops.add(op);
    }
    LockSupport.unpark(thread);
    return op.future;
  }

  /**
   * Returns the number of operations not yet complete.
   *
   * @return the count
   */
  public int inFlight() {
    synchronized (ops) {
      return ops.size();
    }
  }

  private void run() {
    long sleep = 2_000;
    while (true) {
      if (closed) {
        List<Op> left;
        synchronized (ops) {
          left = new ArrayList<>(ops);
        }
        for (Op op : left) {
          fail(op, new IllegalStateException(op.describe() + " failed: the helper was closed with " + left.size()
              + " operation(s) in flight"));
        }
        return;
      }
      boolean moved = step();
      if (moved) {
        sleep = 2_000;
      } else {
        // Idle waits that grow to 1 ms: short against kernels and messages, long enough to leave the
        // cores to the device (a CPU device shares them).
        LockSupport.parkNanos(sleep);
        sleep = Math.min(sleep * 2, 1_000_000);
      }
    }
  }

  /** One pass over the operations, in the order they were asked for. Returns whether any moved. */
  private boolean step() {
    List<Op> snapshot;
    synchronized (ops) {
      snapshot = new ArrayList<>(ops);
    }
    boolean moved = false;
    boolean earlierSendWaiting = false;
    boolean earlierReceiveUnposted = false;
    for (Op op : snapshot) {
      try {
        switch (op.state) {
          case WAIT_DEVICE -> {
            // Sends start in order: a send whose data is ready waits for earlier sends to start.
            if (!earlierSendWaiting && op.before.finished()) {
              op.request = comm.iSend(op.staging, op.peer, op.tag);
              op.state = State.WAIT_MPI;
              moved = true;
            }
          }
          case WAIT_MPI -> {
            if (!op.send && op.request == null) {
              if (!earlierReceiveUnposted) {
                op.request = comm.iReceive(op.staging, op.peer, op.tag);
                moved = true;
              }
            }
            if (op.request != null && op.request.test()) {
              if (op.send) {
                op.state = State.DONE;
              } else {
                op.gate.open();
                op.state = State.WAIT_WRITE;
              }
              moved = true;
            }
          }
          case WAIT_WRITE -> {
            if (op.after.finished()) {
              op.state = State.DONE;
              moved = true;
            }
          }
          default -> { }
        }
      } catch (RuntimeException | Error e) {
        fail(op, new IllegalStateException(op.describe() + " failed: " + e.getMessage(), e));
        moved = true;
      }
      if (op.send && op.state == State.WAIT_DEVICE) {
        earlierSendWaiting = true;
      }
      if (!op.send && op.request == null && op.state == State.WAIT_MPI) {
        earlierReceiveUnposted = true;
      }
      if (op.state == State.DONE) {
        finish(op);
      }
    }
    return moved;
  }

  private void finish(Op op) {
    synchronized (ops) {
      ops.remove(op);
    }
    release(op);
    op.future.complete(null);
  }

  private void fail(Op op, RuntimeException why) {
    synchronized (ops) {
      ops.remove(op);
    }
    if (op.gate != null && op.state != State.WAIT_WRITE) {
      op.gate.fail();
    }
    release(op);
    op.state = State.DONE;
    op.future.completeExceptionally(why);
  }

  private static void release(Op op) {
    if (op.before != null) {
      op.before.release();
    }
    if (op.after != null) {
      op.after.release();
    }
  }

  /**
   * Stops the progress thread. Operations still in flight fail with an exception saying so, and the device
   * work behind their gates ends with an error; MPI messages already started are left to MPI.
   */
  @Override
  public void close() {
    synchronized (ops) {
      if (closed) {
        return;
      }
      closed = true;
    }
    LockSupport.unpark(thread);
    try {
      thread.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
