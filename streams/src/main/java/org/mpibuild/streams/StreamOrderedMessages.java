package org.mpibuild.streams;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntFunction;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/**
 * The MPI half of stream-ordered messages and collectives, shared by the backends' helpers (for example
 * {@code org.mpibuild.opencl.QueueMessenger}): a progress thread that starts each MPI operation once the
 * device work it depends on has finished, and releases device work that waits for an operation once its
 * result is on the host. The device half is given as {@link DeviceStep}s and {@link Gate}s, which the
 * progress thread polls; it never runs inside a driver callback (a step may ask a callback to wake the
 * thread, nothing more).
 *
 * <p>Order: sends start in the order they were asked for, and so do receives; MPI keeps messages between
 * two ranks with one tag in that order. Collectives ({@link #broadcast}, {@link #allReduce}) take a ticket
 * when they are asked for, shared by every helper on the same {@link Communicator} object, and start in
 * ticket order, so ranks that ask for the same collectives in the same order match them, whatever the
 * timing of their queues and however many helpers (queues) a rank has on that communicator.
 *
 * <p>All or nothing: a collective carries a status word with its data (in the broadcast's header, in an
 * all-reduce MAX started right after the data's), so that when one rank's device work fails, every rank's
 * future fails with the same message naming that rank, and no rank waits for ever. Each collective has a
 * deadline: every rank but 0 sends rank 0 a one-byte arrival when it starts the collective, and past the
 * deadline rank 0 fails the collective naming the ranks that never came, then aborts the job (MPI cannot
 * cancel a collective that other ranks have entered); the other ranks do the same after twice the deadline,
 * in case rank 0 is the absent one.
 *
 * <p>Every future fails, never hangs, when MPI or the device reports an error, or when the helper is closed
 * with sends or receives in flight (gates are then failed, so the device work queued behind them ends with an
 * error instead of waiting forever). A collective left at the close ends alike on every rank (see {@link #close}).
 *
 * <p>The progress thread calls MPI while the program's threads may too, so MPI must provide
 * {@code MPI_THREAD_MULTIPLE}; {@link #StreamOrderedMessages(Communicator, String, Duration, IntFunction)} checks.
 *
 * <p>Inside, by role, all package-private: this class checks what it is asked and hands each operation
 * ({@code StreamOp}) to the {@code OperationTable}, which keeps the operations in order and ends them (finished,
 * failed, handed over); the {@code ProgressLoop} on the {@code ProgressThread} passes over them, each pass
 * ({@code ProgressPass}) moving sends and receives on through {@code PointToPointSteps} and collectives through
 * {@code CollectiveSteps}, then waiting as {@code ParkPolicy} says; {@code QueueRuns} is what a device queue's
 * own thread does for an operation it runs ({@link QueuedOperation}), and {@code FailedCommands} takes over
 * those whose command failed; {@code StagingPool} holds the reused staging buffers, {@code CollectiveTickets}
 * and {@code PersistentCollectives} what the helpers on one communicator share.
 */
public final class StreamOrderedMessages implements AutoCloseable {
  /** The bytes before the data in a broadcast's staging buffer: the root's status word. */
  public static final int BROADCAST_HEADER = 8;
  /** The tag of the arrival messages of collectives, reserved on the helper's communicator. */
  public static final int ARRIVAL_TAG = 32_765;
  /** The deadline of a collective when none is given. */
  public static final Duration DEFAULT_DEADLINE = Duration.ofMinutes(2);
  /** The most bytes of staging buffers kept for reuse ({@link #staging}). */
  static final long STAGING_POOL_BYTES = 64L << 20;

  private final Communicator comm;
  private final StagingPool pool = new StagingPool(STAGING_POOL_BYTES);
  private final CollectiveSteps collectives;
  private final OperationTable table;
  private final QueueRuns queueRuns;
  private final FailedCommands failedCommands;
  private final ProgressThread progress;
  private final Closing closing;

  /**
   * Starts the progress thread, with collectives' deadline {@link #DEFAULT_DEADLINE} and device error codes
   * shown as numbers.
   *
   * @param comm the communicator the messages travel on; the caller keeps and closes it
   * @param name for the thread's name and messages, for example the queue
   * @throws IllegalStateException if MPI does not provide MPI_THREAD_MULTIPLE
   */
  StreamOrderedMessages(Communicator comm, String name) {
    this(comm, name, DEFAULT_DEADLINE, code -> "error " + code);
  }

  /**
   * Starts the progress thread.
   *
   * @param comm the communicator the messages travel on; the caller keeps and closes it. Collectives are
   *     ordered with those of every other helper on the same object
   * @param name for the thread's name and messages, for example the queue
   * @param deadline how long a collective waits, from when this rank started it, for every rank to start it;
   *     {@link Duration#ZERO} waits for ever
   * @param deviceCodes names a device error code ({@link DeviceFailure#code()}), the same on every rank
   * @throws IllegalStateException if MPI does not provide MPI_THREAD_MULTIPLE
   */
  public StreamOrderedMessages(Communicator comm, String name, Duration deadline, IntFunction<String> deviceCodes) {
    if (comm.threadLevel() != Communicator.ThreadLevel.MULTIPLE) {
      throw new IllegalStateException("stream-ordered messages need MPI_THREAD_MULTIPLE (a progress thread calls "
          + "MPI), but MPI provides MPI_THREAD_" + comm.threadLevel() + ": initialize MPI with "
          + "MPI.InitThread(args, MPI.THREAD_MULTIPLE)");
    }
    if (deadline.isNegative()) {
      throw new IllegalArgumentException("deadline " + deadline + " is negative");
    }
    this.comm = comm;
    CollectiveTickets tickets = CollectiveTickets.of(comm);
    this.progress = new ProgressThread(name, tickets);
    this.table = new OperationTable(name, tickets, pool, progress);
    this.collectives = new CollectiveSteps(comm, deadline, deviceCodes, tickets, pool, table);
    this.closing = new Closing(table, deadline);
    this.queueRuns = new QueueRuns(table, comm, collectives, closing);
    this.failedCommands = new FailedCommands(table, pool);
    progress.start(new ProgressLoop(comm, table, new PointToPointSteps(comm, table), collectives, failedCommands,
        closing));
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
    return table.add(new StreamOp(StreamOp.Kind.SEND, staging, dest, tag, filled, null, null));
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
    return table.add(new StreamOp(StreamOp.Kind.RECEIVE, staging, source, tag, null, gate, written));
  }

  /**
   * Broadcasts from {@code root} in ticket order (see the class comment). {@code staging} holds
   * {@link #BROADCAST_HEADER} bytes for the root's status, then the data. On the root, {@code filled} copies
   * the device buffer into the data part and the collective starts when it has finished (or failed: the
   * failure then travels in the header); elsewhere the collective starts at its turn, then {@code gate}
   * opens and {@code written} copies the data part to the device.
   *
   * @param staging header and data, direct, equal in size on every rank
   * @param root the rank whose data is sent
   * @param filled on the root, the device step that fills the data part; elsewhere null
   * @param gate elsewhere than the root, opened when the data part holds the root's data; on the root null
   * @param written elsewhere than the root, the copy to the device behind the gate; on the root null
   * @return completes on the root when the broadcast is done, elsewhere when the data is on the device;
   *     fails on every rank if the root's device step failed
   */
  public CompletableFuture<Void> broadcast(ByteBuffer staging, int root, DeviceStep filled, Gate gate,
      DeviceStep written) {
    check(root, 0);
    if (staging.remaining() <= BROADCAST_HEADER) {
      throw new IllegalArgumentException("a broadcast's staging buffer holds the header and at least 1 byte");
    }
    if ((root == comm.rank()) != (filled != null) || (gate == null) != (written == null)
        || (root == comm.rank()) == (gate != null)) {
      throw new IllegalArgumentException("the root fills its staging buffer from the device (filled); the other "
          + "ranks open a gate and write it to the device (gate, written)");
    }
    return table.add(new StreamOp(StreamOp.Kind.BROADCAST, staging, root, -1, filled, gate, written));
  }

  /**
   * Reduces {@code count} values of {@code type} over every rank in ticket order (see the class comment):
   * once {@code filled} has copied the device buffer into {@code send}, the all-reduce into {@code receive}
   * starts, then an all-reduce MAX of the status word; when both are done and every rank succeeded,
   * {@code gate} opens and {@code written} copies {@code receive} to the device.
   *
   * @param send this rank's values, direct, native byte order
   * @param receive where the results go, direct; or {@code send} itself, in place: MPI then works on two
   *     buffers of this helper's pool, the values copied in at the collective's turn on the progress thread
   *     and the results copied back into {@code send} before the gate opens (on failure {@code send} keeps this
   *     rank's values), so that MPI never holds {@code send}. In place suits a {@code send} that is a device
   *     buffer mapped into host memory, which the program may release once the gate has opened
   * @param count how many values, the same on every rank
   * @param type their type
   * @param op the reduction
   * @param filled the device step that fills {@code send}
   * @param gate opened when {@code receive} holds the results
   * @param written the copy of {@code receive} to the device behind the gate
   * @return completes when the results are on the device; fails on every rank, with the same message naming
   *     the failing rank, if one rank's device step failed
   */
  public CompletableFuture<Void> allReduce(ByteBuffer send, ByteBuffer receive, int count, Datatype type,
      ReduceOp op, DeviceStep filled, Gate gate, DeviceStep written) {
    if (count <= 0) {
      throw new IllegalArgumentException("count " + count + " must be 1 or more");
    }
    long bytes = (long) count * type.bytes();
    if (send.remaining() < bytes || receive.remaining() < bytes || !send.isDirect() || !receive.isDirect()) {
      throw new IllegalArgumentException("an all-reduce of " + count + " " + type + " needs direct buffers of "
          + bytes + " bytes, not " + send.remaining() + " and " + receive.remaining());
    }
    StreamOp o = new StreamOp(StreamOp.Kind.ALL_REDUCE, send, -1, -1, filled, gate, written);
    o.receive = receive;
    o.count = count;
    o.type = type;
    o.reduceOp = op;
    return table.add(o);
  }

  /**
   * This rank's part in an all-reduce whose device work the device refused to enqueue: it takes part with the
   * refusal, on staging buffers of its own and with nothing queued behind it, so that every rank fails with one
   * message naming it instead of waiting for it ({@link Refused}).
   *
   * @param count how many values, the same on every rank
   * @param type their type
   * @param op the reduction
   * @param refusal what the device refused
   * @return fails on every rank once the collective's turn has come
   */
  public CompletableFuture<Void> allReduceRefused(int count, Datatype type, ReduceOp op, DeviceFailure refusal) {
    if (count <= 0) {
      throw new IllegalArgumentException("count " + count + " must be 1 or more");
    }
    ByteBuffer none = staging(messageBytes((long) count * type.bytes()));
    return allReduce(none, none, count, type, op, new Refused(refusal), NothingQueued.NOTHING_QUEUED,
        NothingQueued.NOTHING_QUEUED);
  }

  /**
   * This rank's part in a broadcast whose device work the device refused to enqueue, as
   * {@link #allReduceRefused}: a refused root's failure travels to every rank in the header; a refused receiver
   * fails alone, still taking part so that the others, which may need it to pass the data on, never wait for it.
   *
   * @param bytes the broadcast's data bytes, the same on every rank
   * @param root the rank whose data is sent
   * @param refusal what the device refused
   * @return fails on every rank if this is the root, else on this rank alone
   */
  public CompletableFuture<Void> broadcastRefused(int bytes, int root, DeviceFailure refusal) {
    if (bytes <= 0 || bytes > Integer.MAX_VALUE - BROADCAST_HEADER) {
      throw new IllegalArgumentException("a broadcast of " + bytes + " bytes does not fit one staging buffer");
    }
    ByteBuffer none = staging(BROADCAST_HEADER + bytes);
    return comm.rank() == root ? broadcast(none, root, new Refused(refusal), null, null)
        : broadcast(none, root, null, NothingQueued.NOTHING_QUEUED, new Refused(refusal));
  }

  /**
   * Prepares a send that the device's queue runs itself (see {@link QueuedOperation}): sends start in the order
   * the queue reaches them, which is the order they were asked for.
   *
   * @param bytes the message's size
   * @param dest the destination rank
   * @param tag the message tag, 0 or more
   * @return the send
   */
  public QueuedOperation sendOnQueue(int bytes, int dest, int tag) {
    check(dest, tag);
    return queued(new StreamOp(StreamOp.Kind.SEND, pool.take(messageBytes(bytes)), dest, tag, null, null, null),
        bytes);
  }

  /**
   * Prepares a receive that the device's queue runs itself (see {@link QueuedOperation}): receives are posted
   * in the order the queue reaches them, which is the order they were asked for.
   *
   * @param bytes the message's size
   * @param source the source rank
   * @param tag the message tag, 0 or more
   * @return the receive
   */
  public QueuedOperation receiveOnQueue(int bytes, int source, int tag) {
    check(source, tag);
    return queued(new StreamOp(StreamOp.Kind.RECEIVE, pool.take(messageBytes(bytes)), source, tag, null, null,
        null), bytes);
  }

  /**
   * Prepares an all-reduce that the device's queue runs itself (see {@link QueuedOperation}); takes its
   * ticket now. The backend then enqueues its command and calls {@link QueuedOperation#enqueued}.
   *
   * @param count how many values, the same on every rank
   * @param type their type
   * @param op the reduction
   * @return the collective
   */
  public QueuedOperation allReduceOnQueue(int count, Datatype type, ReduceOp op) {
    if (count <= 0) {
      throw new IllegalArgumentException("count " + count + " must be 1 or more");
    }
    int bytes = messageBytes((long) count * type.bytes());
    StreamOp o = new StreamOp(StreamOp.Kind.ALL_REDUCE, null, -1, -1, null, null, null);
    o.count = count;
    o.type = type;
    o.reduceOp = op;
    return queued(o, bytes);
  }

  /**
   * Prepares a broadcast that the device's queue runs itself (see {@link QueuedOperation}); takes its ticket
   * now.
   *
   * @param bytes how many bytes, the same on every rank
   * @param root the rank whose bytes are sent
   * @return the collective
   */
  public QueuedOperation broadcastOnQueue(int bytes, int root) {
    check(root, 0);
    if (bytes <= 0 || bytes > Integer.MAX_VALUE - BROADCAST_HEADER) {
      throw new IllegalArgumentException("a broadcast of " + bytes + " bytes: it must be between 1 and "
          + (Integer.MAX_VALUE - BROADCAST_HEADER));
    }
    StreamOp o = new StreamOp(StreamOp.Kind.BROADCAST, pool.take(BROADCAST_HEADER + bytes), root, -1, null, null,
        null);
    return queued(o, bytes);
  }

  /** Adds an operation that the device's queue runs itself, taking its place in the order (and its ticket). */
  private QueuedOperation queued(StreamOp op, int bytes) {
    op.onQueue = true;
    table.add(op);
    return new QueuedOperation(op, bytes, queueRuns, failedCommands);
  }

  /**
   * Returns a direct host buffer, in native byte order, to stage an operation's data in: reused from an
   * earlier operation of this helper that completed, if one of that size did, else newly allocated. Its
   * contents are undefined. Once given to {@link #send}, {@link #receive}, {@link #broadcast} or
   * {@link #allReduce} (as {@code staging}, {@code send} or {@code receive}), it belongs to the operation: it
   * comes back for reuse when the operation completes, and is dropped if it fails.
   *
   * @param bytes its size, 1 or more
   * @return the buffer, position 0, limit {@code bytes}
   */
  public ByteBuffer staging(int bytes) {
    if (bytes <= 0) {
      throw new IllegalArgumentException("a staging buffer of " + bytes + " bytes: it must hold 1 byte or more");
    }
    return pool.take(bytes);
  }

  /**
   * Gives up a buffer from {@link #staging} that no operation received (its enqueue failed): it is never
   * reused, and stays reachable with the helper, since device work enqueued before the failure may use it.
   *
   * @param buffer the buffer, or null
   */
  public void discard(ByteBuffer buffer) {
    table.discard(buffer);
  }

  /**
   * Returns the bytes of staging buffers waiting for reuse (for tests and diagnostics).
   *
   * @return the count, at most 64 MiB
   */
  long stagingBytesPooled() {
    return pool.freeBytes();
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

  /**
   * Checks a broadcast's root for the backends' helpers, before they enqueue anything.
   *
   * @param root the root asked for
   * @throws IllegalArgumentException if it is not a rank of the communicator
   */
  public void checkRoot(int root) {
    check(root, 0);
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

  /**
   * Returns the number of operations not yet complete.
   *
   * @return the count
   */
  public int inFlight() {
    return table.inFlight();
  }

  /**
   * Returns how many of this helper's collectives were started as persistent collectives (see
   * {@link PersistentCollectives}): 0 where the communicator has none ({@link Communicator#persistentCollectives}).
   *
   * @return the count
   */
  public long persistentStarts() {
    return collectives.persistentStarts();
  }

  /**
   * Stops the progress thread. Sends and receives still in flight fail with an exception saying so, and the device
   * work behind their gates ends with an error; MPI operations already started are left to MPI. Collectives left
   * end alike on every rank, and the close waits for them: one started goes on to its end (success where every
   * rank completes it); one not yet started takes part at its turn, without waiting for its device work, with
   * "closed" as its status, so that it fails on every rank with one message naming this rank. A collective whose
   * turn has not come within the deadline (an earlier one of another helper on the communicator holds it) fails
   * here alone and gives up its turn, so the other helpers go on; the other ranks reach their deadline, which names
   * this rank.
   */
  @Override
  public void close() {
    if (!table.close()) {
      return;
    }
    progress.wake();
    progress.join(closing.joinMillis());
    pool.clear();
  }
}
