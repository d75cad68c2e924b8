package org.mpibuild.streams;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.locks.LockSupport;
import org.mpibuild.spi.Communicator;

/**
 * The life of a {@link QueuedOperation} on the device queue's own thread: a collective run whole through
 * {@link CollectiveSteps}, a receive waited for, a send started (and handed to the progress thread if MPI does
 * not complete it at once). The {@link OperationTable} keeps the lists, and fails, finishes and hands over
 * operations; this class only does what the queue's thread does between claiming an operation and returning
 * from it.
 */
final class QueueRuns {
  /**
   * How long a collective or receive that the device's queue runs spins, testing MPI, after it last moved (a
   * receive: after it was posted), before it parks, plus a nanosecond per byte of its data
   * ({@link #queueSpinNanos}): the queue
   * waits for it anyway, as it would for a blocking MPI call, which MPI spins in for ever; bounded here so that a
   * rank far behind costs the others no core. A large message moves inside MPI, in fragments that need both
   * ranks' tests, without completing a request: hence the time a transfer takes at 1 GB/s. Measured with
   * {@code make bench-allreduce}: at 20 us the parks (about 60 us each on Linux) made the 4 KiB loop several
   * times slower than the manual pattern.
   */
  static final long QUEUE_SPIN_NANOS = 200_000;

  private final OperationTable table;
  private final Communicator comm;
  private final CollectiveSteps collectives;
  private final Closing closing;

  QueueRuns(OperationTable table, Communicator comm, CollectiveSteps collectives, Closing closing) {
    this.table = table;
    this.comm = comm;
    this.collectives = collectives;
    this.closing = closing;
  }

  /** Runs {@code op} on the calling thread, the queue's, on {@code bytes} of {@code device}. */
  void run(StreamOp op, ByteBuffer device, int bytes) {
    switch (op.kind) {
      case SEND -> send(op, device, bytes);
      case RECEIVE -> receive(op, device, bytes);
      default -> collective(op, device, bytes);
    }
  }

  /** A collective: its whole life, through the same steps as the progress thread's. */
  private void collective(StreamOp op, ByteBuffer device, int bytes) {
    if (!op.claim(StreamOp.QUEUE)) {
      return;
    }
    ByteBuffer memory = device.duplicate().clear().limit(bytes).slice().order(ByteOrder.nativeOrder());
    if (op.kind == StreamOp.Kind.ALL_REDUCE) {
      op.staging = memory; // in place: MPI gets pooled copies (CollectiveSteps.startData)
      op.receive = memory;
    } else if (comm.rank() == op.peer) {
      op.staging.duplicate().position(StreamOrderedMessages.BROADCAST_HEADER).put(memory.duplicate());
    }
    Backoff backoff = new Backoff(bytes);
    while (true) {
      boolean closed = table.closed();
      if (closed && !closing.goesOn(op)) {
        table.fail(op, closing.givenUp(op));
        return;
      }
      ProgressPass pass = new ProgressPass(true);
      try {
        collectives.step(op, pass);
      } catch (RuntimeException | Error e) {
        if (op.state != StreamOp.State.DONE) {
          table.fail(op, new IllegalStateException(op.describe() + " failed: " + e.getMessage(), e));
        }
        return;
      }
      if (op.state == StreamOp.State.DONE) {
        if (!op.future.isDone()) {
          if (op.kind == StreamOp.Kind.BROADCAST && comm.rank() != op.peer) {
            memory.duplicate().put(op.staging.duplicate().position(StreamOrderedMessages.BROADCAST_HEADER));
          }
          table.finish(op);
        }
        return;
      }
      if (pass.moved) {
        backoff.moved();
      } else {
        backoff.pause(Math.min(collectives.deadlineOf(op), closed ? closing.boundOf(op) : Long.MAX_VALUE));
      }
    }
  }

  /** A send: copies the data and starts it; completes it if MPI has at once, else hands it over. */
  private void send(StreamOp op, ByteBuffer device, int bytes) {
    if (!op.claim(StreamOp.QUEUE)) {
      return;
    }
    try {
      if (table.closed()) {
        throw new IllegalStateException("the helper was closed");
      }
      op.staging.duplicate().clear().put(device.duplicate().clear().limit(bytes));
      op.request = comm.iSend(op.staging, op.peer, op.tag);
      op.state = StreamOp.State.WAIT_MPI;
      if (op.request.test()) {
        op.mpiDone = true;
        op.state = StreamOp.State.DONE;
        table.finish(op);
        return;
      }
    } catch (RuntimeException | Error e) {
      table.fail(op, new IllegalStateException(op.describe() + " failed: " + e.getMessage(), e));
      return;
    }
    table.handOver(op); // the progress thread completes it; the queue goes on, the data being copied
  }

  /** A receive: posts it in its turn, waits, and copies the message into the device's memory. */
  private void receive(StreamOp op, ByteBuffer device, int bytes) {
    if (!op.claim(StreamOp.QUEUE)) {
      return;
    }
    try {
      // receives are posted in the order they were asked for: behind one the progress thread has not posted yet
      if (!waitFor(op, () -> !table.earlierReceiveUnposted(op), 0)) {
        table.fail(op, new IllegalStateException(op.describe() + " failed: the helper was closed while the device's "
            + "queue waited for it"));
        return;
      }
      op.request = comm.iReceive(op.staging, op.peer, op.tag);
      op.state = StreamOp.State.WAIT_MPI;
      if (!waitFor(op, () -> op.request.test(), bytes)) {
        table.fail(op, new IllegalStateException(op.describe() + " failed: the helper was closed while the device's "
            + "queue waited for it"));
        return;
      }
      op.mpiDone = true;
      device.duplicate().clear().put(op.staging.duplicate().clear().limit(bytes));
      op.state = StreamOp.State.DONE;
      table.finish(op);
    } catch (RuntimeException | Error e) {
      table.fail(op, new IllegalStateException(op.describe() + " failed: " + e.getMessage(), e));
    }
  }

  /**
   * Tests {@code done} on the queue's thread until it says so: spins, then parks (see {@link #QUEUE_SPIN_NANOS});
   * false if the helper was closed meanwhile.
   */
  private boolean waitFor(StreamOp op, java.util.function.BooleanSupplier done, long bytes) {
    Backoff backoff = new Backoff(bytes);
    while (!done.getAsBoolean()) {
      if (table.closed()) {
        return false;
      }
      backoff.pause(Long.MAX_VALUE);
    }
    return true;
  }

  /**
   * The wait between two MPI tests on the queue's thread: a spin of {@link #queueSpinNanos} from the start or the
   * last movement (MPI moves only when tested, and the queue waits for this operation anyway), then parks from
   * 1 us growing to {@link ParkPolicy#MPI_PARK_NANOS}, short enough that MPI is tested often without holding a
   * core that the other ranks' work (a CPU device shares them) may need.
   *
   * <p>The parks never grow further, however long the wait (the progress thread's grow to
   * {@link ParkPolicy#POLL_PARK_NANOS} after {@link ParkPolicy#MPI_IDLE_NANOS}): the device's queue can do nothing
   * until this operation completes, so the sooner a test sees it, the sooner the device goes on. Measured ad hoc
   * on 2026-12-04 on 2 shared cores in a VM, where a park and its wake-up cost about 25 us of CPU and oversleep by
   * about 80 us: parks of 100 us cost 14% of a core while a receive waits, parks of 1 ms 3% (a blocking
   * {@code MPI_Wait} spins: 100%); a test comes every 0.18 ms instead of every 1.1 ms, so a message is seen about
   * 0.45 ms sooner on average, twice per round of a ping-pong whose kernels take 80 ms.
   */
  private final class Backoff {
    private final long spin;
    private long spinUntil;
    private long sleep = 1_000;

    Backoff(long bytes) {
      this.spin = queueSpinNanos(bytes);
      this.spinUntil = System.nanoTime() + spin;
    }

    /** MPI moved: spin again. */
    void moved() {
      spinUntil = System.nanoTime() + spin;
      sleep = 1_000;
    }

    /** Spins or parks once, never past {@code deadline} (System.nanoTime, or Long.MAX_VALUE). */
    void pause(long deadline) {
      long now = System.nanoTime();
      if (now - spinUntil < 0) {
        Thread.onSpinWait();
        return;
      }
      long park = sleep;
      if (deadline != Long.MAX_VALUE) {
        park = Math.max(1_000, Math.min(park, deadline - now));
      }
      LockSupport.parkNanos(QueueRuns.this, park);
      sleep = Math.min(sleep * 2, ParkPolicy.MPI_PARK_NANOS);
    }
  }

  /** How long a collective of {@code bytes} on the queue spins before it parks (see {@link #QUEUE_SPIN_NANOS}). */
  static long queueSpinNanos(long bytes) {
    return QUEUE_SPIN_NANOS + bytes;
  }
}
