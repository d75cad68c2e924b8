package org.mpibuild.streams;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;
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
 * with operations in flight (gates are then failed, so the device work queued behind them ends with an
 * error instead of waiting forever).
 *
 * <p>The progress thread calls MPI while the program's threads may too, so MPI must provide
 * {@code MPI_THREAD_MULTIPLE}; {@link #StreamOrderedMessages(Communicator, String, Duration, IntFunction)} checks.
 *
 * <p>Inside, by role: this class holds the API, the progress thread and point-to-point messages; the
 * package-private {@code CollectiveSteps} the collectives (turns, status word, deadline, persistent
 * requests), {@code QueueRuns} what a device queue's own thread does for an operation it runs
 * ({@link QueuedOperation}), {@code StreamOp} one operation, {@code ProgressPass} what one pass over them saw,
 * and {@code StagingPool} the reused staging buffers.
 */
public final class StreamOrderedMessages implements AutoCloseable {
  /** The bytes before the data in a broadcast's staging buffer: the root's status word. */
  public static final int BROADCAST_HEADER = 8;
  /** The tag of the arrival messages of collectives, reserved on the helper's communicator. */
  public static final int ARRIVAL_TAG = 32_765;
  /** The deadline of a collective when none is given. */
  public static final Duration DEFAULT_DEADLINE = Duration.ofMinutes(2);
  /** The exit status of the abort at a missed deadline. */
  static final int ABORT_CODE = 4;
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
  private static final long WOKEN_PARK_NANOS = SWEEP_MILLIS * 1_000_000L;
  /** The most bytes of staging buffers kept for reuse ({@link #staging}). */
  static final long STAGING_POOL_BYTES = 64L << 20;

  /**
   * Device work the progress thread polls. A helper's steps run on one in-order queue or stream: of the steps
   * before its operations, and of the steps after them, none finishes before the ones enqueued earlier, so the
   * progress thread asks only the earliest unfinished one of each, however many operations are in flight.
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

  /** Device work held back until the progress thread opens it. */
  public interface Gate {
    /** Lets the work behind the gate run. */
    void open();

    /**
     * Releases the work behind the gate without the operation's result, so that nothing waits for it forever:
     * with an error where the device API can (which PoCL 3.1 and CUDA cannot: there the work runs; the engine
     * first puts an all-reduce's own input back into its staging buffer, so its device buffer is unchanged).
     */
    void fail();
  }

  /**
   * The step of a collective whose device work the device refused to enqueue (a size past a buffer's end, a
   * driver without a feature): it fails with the refusal when first asked. Pass it as the collective's
   * {@code filled} step, with {@link #NOTHING_QUEUED} as gate and written step (or, where a rank has no
   * {@code filled} step, a broadcast's receiver, as its {@code written} step): this rank still takes part, so
   * that no rank waits for it, and a collective that agrees on its status fails on every rank with this
   * failure and this rank's number.
   *
   * @param failure what the device refused
   */
  public record Refused(DeviceFailure failure) implements DeviceStep {
    /**
     * Checks the failure.
     *
     * @param failure what the device refused, not null
     */
    public Refused {
      Objects.requireNonNull(failure, "failure");
    }

    @Override
    public boolean finished() {
      throw failure;
    }

    @Override
    public void release() {}
  }

  /** Gate and written step where nothing was enqueued behind a refused collective ({@link Refused}). */
  public static final NothingQueued NOTHING_QUEUED = new NothingQueued();

  /** A gate with nothing behind it, and a step with nothing to do: see {@link #NOTHING_QUEUED}. */
  public static final class NothingQueued implements Gate, DeviceStep {
    private NothingQueued() {}

    @Override
    public void open() {}

    @Override
    public void fail() {}

    @Override
    public boolean finished() {
      return true;
    }

    @Override
    public void release() {}
  }

  private final Communicator comm;
  private final String name;
  private final CollectiveTickets tickets;
  private final StagingPool pool = new StagingPool(STAGING_POOL_BYTES);
  private final CollectiveSteps collectives;
  /** The operations' lives on the queue's thread ({@link QueuedOperation}). */
  private final QueueRuns queueRuns;
  private final List<StreamOp> ops = new ArrayList<>();
  /**
   * The operations that the device's queue runs itself ({@link QueuedOperation}), in queue order, under the lock
   * of {@link #ops}, until they end or move to {@link #ops}: a send that MPI did not complete at once, or an
   * operation whose command failed, which the progress thread takes over (it sweeps them for that).
   */
  private final ArrayDeque<StreamOp> onQueue = new ArrayDeque<>();
  /** The order operations were asked for in, under the lock of {@link #ops}. */
  private long nextSeq;
  /**
   * Operations that failed, and buffers given up, while MPI or the device may still use them (MPI cannot cancel
   * a started operation; the work behind a failed gate, or enqueued before a failure, still runs): kept
   * reachable, so that the garbage collector never frees memory in use, for as long as the helper is.
   */
  private final List<Object> retained = new ArrayList<>();
  private final Thread thread;
  private final Runnable wake;
  volatile boolean closed;

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
    this.name = name;
    this.tickets = CollectiveTickets.of(comm);
    this.collectives = new CollectiveSteps(comm, deadline, deviceCodes, tickets, pool, this::fail);
    this.queueRuns = new QueueRuns(this, comm, collectives);
    this.thread = new Thread(this::run, "mpi-build-stream " + name);
    this.thread.setDaemon(true);
    Thread t = this.thread;
    this.wake = () -> LockSupport.unpark(t);
    tickets.register(thread);
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
    return add(new StreamOp(StreamOp.Kind.SEND, staging, dest, tag, filled, null, null));
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
    return add(new StreamOp(StreamOp.Kind.RECEIVE, staging, source, tag, null, gate, written));
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
    return add(new StreamOp(StreamOp.Kind.BROADCAST, staging, root, -1, filled, gate, written));
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
    return add(o);
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
    return allReduce(none, none, count, type, op, new Refused(refusal), NOTHING_QUEUED, NOTHING_QUEUED);
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
        : broadcast(none, root, null, NOTHING_QUEUED, new Refused(refusal));
  }

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
   * <p>If the command never runs (a command before it failed, so the device fails it too), the progress thread
   * finds the failure on its next sweep (at most {@value #SWEEP_MILLIS} ms later) and takes part for this rank
   * with the failure, so that every rank ends with it; {@link #enqueueFailed} does the same at once.
   */
  public final class QueuedOperation {
    private final StreamOp op;
    private final int bytes;

    private QueuedOperation(StreamOp op, int bytes) {
      this.op = op;
      this.bytes = bytes;
    }

    /**
     * Returns the future of the collective.
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
      takeOver(op, why);
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
      queueRuns.run(op, device, bytes);
    }
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
    add(op);
    return new QueuedOperation(op, bytes);
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
    if (buffer != null) {
      pool.forget(buffer);
      retain(buffer);
    }
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

  private CompletableFuture<Void> add(StreamOp op) {
    // Only the step before an operation may wake the thread: what waits for it is this thread. The write after
    // is polled, since a driver's callback may run on the thread that would start the work queued behind that
    // write (PoCL runs it there, and JOCL attaches that thread to the JVM and detaches it again for each call),
    // which would delay the program's own work.
    if (op.before != null) {
      op.beforeWakes = op.before.wakeWhenFinished(() -> {
        op.beforeSignalled = true;
        wake.run();
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
      return ops.size() + onQueue.size();
    }
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


  private void run() {
    try {
      long sleep = 2_000;
      long spinUntil = 0;
      long lastSweep = System.nanoTime();
      long lastMoved = lastSweep;
      while (true) {
        if (closed) {
          failAll();
          return;
        }
        long started = System.nanoTime();
        boolean sweep = started - lastSweep >= WOKEN_PARK_NANOS;
        if (sweep) {
          lastSweep = started;
        }
        ProgressPass pass = step(sweep);
        long now = System.nanoTime();
        if (pass.moved) {
          lastMoved = now;
          sleep = 2_000;
          spinUntil = now + SPIN_NANOS;
          continue;
        }
        if (pass.mpi && now - spinUntil < 0) {
          Thread.onSpinWait(); // MPI moves only when tested: a short spin right after progress
          continue;
        }
        long cap = !pass.any ? Long.MAX_VALUE
            : pass.mpi ? (!pass.collectiveMpi && now - lastMoved > MPI_IDLE_NANOS ? POLL_PARK_NANOS : MPI_PARK_NANOS)
            : pass.polledDevice ? POLL_PARK_NANOS : WOKEN_PARK_NANOS;
        long park = Math.min(sleep, cap);
        if (pass.nextDeadline != Long.MAX_VALUE) {
          park = Math.max(1_000, Math.min(park, pass.nextDeadline - now));
        }
        if (!pass.any) {
          LockSupport.park(this); // woken by add and close
        } else {
          LockSupport.parkNanos(this, park);
        }
        // Idle waits grow: short against kernels and messages, long enough to leave the cores to the device
        // (a CPU device shares them); device work that completes wakes the thread at once.
        sleep = Math.min(sleep * 2, cap == Long.MAX_VALUE ? WOKEN_PARK_NANOS : cap);
      }
    } finally {
      tickets.unregister(thread);
    }
  }

  private void failAll() {
    List<StreamOp> left;
    synchronized (ops) {
      left = new ArrayList<>(ops);
      left.addAll(onQueue);
    }
    for (StreamOp op : left) {
      if (op.onQueue && !op.claim(StreamOp.PROGRESS)) {
        continue; // the queue's thread is running it: it sees the helper closed and fails it itself
      }
      fail(op, new IllegalStateException(op.describe() + " failed: the helper was closed with " + left.size()
          + " operation(s) in flight"));
    }
  }

  /** One pass over the operations, in the order they were asked for. */
  private ProgressPass step(boolean sweep) {
    if (sweep) {
      sweepOnQueue();
    }
    List<StreamOp> snapshot;
    boolean queued;
    synchronized (ops) {
      snapshot = new ArrayList<>(ops);
      queued = !onQueue.isEmpty();
    }
    ProgressPass pass = new ProgressPass(sweep);
    pass.any = !snapshot.isEmpty() || queued;
    boolean earlierSendWaiting = false;
    boolean earlierReceiveUnposted = false;
    for (StreamOp op : snapshot) {
      try {
        if (op.collective()) {
          collectives.step(op, pass);
        } else {
          switch (op.state) {
            case WAIT_DEVICE -> {
              // Sends start in order: a send whose data is ready waits for earlier sends to start.
              if (!earlierSendWaiting && pass.beforeFinished(op)) {
                op.request = comm.iSend(op.staging, op.peer, op.tag);
                op.state = StreamOp.State.WAIT_MPI;
                pass.moved = true;
              }
            }
            case WAIT_MPI -> {
              if (op.kind == StreamOp.Kind.RECEIVE && op.request == null) {
                if (!earlierReceiveUnposted && !earlierReceiveUnposted(op)) {
                  op.request = comm.iReceive(op.staging, op.peer, op.tag);
                  pass.moved = true;
                }
              }
              if (op.request != null && op.request.test()) {
                op.mpiDone = true;
                if (op.gate == null) { // a send; or a receive of the queue's whose command failed
                  op.state = StreamOp.State.DONE;
                } else {
                  op.gate.open();
                  op.state = StreamOp.State.WAIT_WRITE;
                }
                pass.moved = true;
              }
            }
            case WAIT_WRITE -> pass.awaitWrite(op);
            default -> { }
          }
        }
      } catch (RuntimeException | Error e) {
        if (op.state != StreamOp.State.DONE) {
          fail(op, new IllegalStateException(op.describe() + " failed: " + e.getMessage(), e));
        }
        pass.moved = true;
      }
      if (op.kind == StreamOp.Kind.SEND && op.state == StreamOp.State.WAIT_DEVICE) {
        earlierSendWaiting = true;
      }
      if (op.kind == StreamOp.Kind.RECEIVE && op.request == null && op.state == StreamOp.State.WAIT_MPI) {
        earlierReceiveUnposted = true;
      }
      switch (op.state) {
        case WAIT_MPI -> pass.mpi = true;
        default -> { }
      }
      if (op.collective()) {
        pass.nextDeadline = Math.min(pass.nextDeadline, collectives.deadlineOf(op));
        pass.collectiveMpi |= op.state == StreamOp.State.WAIT_MPI;
      }
      if (op.state == StreamOp.State.DONE && !op.future.isDone()) {
        if (op.onQueue && op.localFailure != null) {
          // a broadcast's receiver whose command failed: the others have the data, its device has not
          fail(op, new IllegalStateException(op.describe() + " failed on rank " + comm.rank() + ": its command on the "
              + "device's queue failed: " + op.localFailure.getMessage(), op.localFailure));
        } else {
          finish(op);
        }
      }
    }
    return pass;
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

  /**
   * Asks the earliest operation of the queue's that has not started running whether its command failed (a
   * command before it failed, so the device fails it too), or completed without running it: then the progress
   * thread takes it over. Only that one:
   * the queue is in order, so a later command cannot fail before it.
   */
  private void sweepOnQueue() {
    StreamOp next = null;
    synchronized (ops) {
      for (StreamOp op : onQueue) {
        if (op.driver() == StreamOp.NOBODY) {
          next = op;
          break;
        }
      }
    }
    if (next == null) {
      return;
    }
    RuntimeException failed = null;
    synchronized (next) {
      if (next.driver == StreamOp.NOBODY && next.command != null) {
        try {
          if (next.command.finished()) {
            // the command claims its operation first thing: complete without it, it failed inside (logged)
            failed = new IllegalStateException("its command on the device's queue completed without running it");
          }
        } catch (RuntimeException e) {
          failed = e;
        }
      }
    }
    if (failed != null) {
      takeOver(next, failed);
    }
  }

  /**
   * The progress thread takes over an operation of the queue's whose command failed or was never enqueued: it
   * takes part with the failure, from a staging buffer, so that every rank ends with it.
   */
  private void takeOver(StreamOp op, RuntimeException why) {
    if (!op.claim(StreamOp.PROGRESS)) {
      return; // the queue's thread runs it after all
    }
    op.localFailure = why;
    if (op.kind == StreamOp.Kind.SEND) {
      fail(op, new IllegalStateException(op.describe() + " failed: its command on the device's queue failed: "
          + why.getMessage(), why)); // nothing was sent: as when a send's read fails
      return;
    }
    if (op.kind == StreamOp.Kind.RECEIVE) {
      op.state = StreamOp.State.WAIT_MPI; // receives the message, so that its sender completes, then fails
    }
    if (op.kind == StreamOp.Kind.ALL_REDUCE) {
      op.staging = pool.take(op.count * op.type.bytes());
      op.receive = op.staging;
    }
    handOver(op);
  }

  /**
   * Makes an operation of the queue's the progress thread's from now on (close included): it moves to the end of
   * {@link #ops}, and the thread is woken. A helper closed meanwhile, whose thread has gone, fails it here.
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
    LockSupport.unpark(thread);
    if (closed && !thread.isAlive() && !op.future.isDone()) {
      fail(op, new IllegalStateException(op.describe() + " failed: the helper was closed with it in flight"));
    }
  }

  void finish(StreamOp op) {
    forget(op);
    op.releaseSteps(true);
    pool.give(op.staging); // neither MPI nor the device touches them any more
    pool.give(op.receive);
    op.future.complete(null);
  }

  void fail(StreamOp op, RuntimeException why) {
    forget(op);
    boolean gateFails = op.gate != null && op.state != StreamOp.State.WAIT_WRITE;
    if (op.state == StreamOp.State.WAIT_MPI && !op.mpiDone || gateFails) {
      retain(op);
    }
    if (gateFails) {
      if (op.kind == StreamOp.Kind.ALL_REDUCE && op.state == StreamOp.State.WAIT_MPI && op.localFailure == null
          && op.receive != op.staging) {
        // the write behind a failed gate may still run (see Gate#fail): it writes back this rank's own values
        op.receive.duplicate().put(op.staging.duplicate());
      }
      op.gate.fail();
    }
    if (op.collective()) {
      collectives.abandon(op);
    }
    op.releaseSteps(false);
    pool.forget(op.staging); // the device work behind a failed gate may still read them
    pool.forget(op.receive);
    op.state = StreamOp.State.DONE;
    op.future.completeExceptionally(why);
  }

  /** Removes an operation from the helper's lists: a queue's at its head, in the usual case. */
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

  /**
   * Stops the progress thread. Operations still in flight fail with an exception saying so, and the device
   * work behind their gates ends with an error; MPI operations already started are left to MPI. A collective
   * not yet started gives up its turn, so the other helpers on the communicator go on.
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
    pool.clear();
  }
}
