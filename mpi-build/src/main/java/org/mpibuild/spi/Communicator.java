package org.mpibuild.spi;

import java.nio.ByteBuffer;
import java.util.concurrent.locks.LockSupport;

/**
 * The few MPI operations a collective build needs, on one intracommunicator.
 *
 * <p>This is the only way the library talks to MPI, so that another binding (Open MPI's {@code mpi.jar},
 * a binding over the MPI C library, or the in-process one used by unit tests) can carry the same protocol.
 * Every method except {@link #rank()}, {@link #size()} and {@link #abort} is collective: all ranks call
 * it in the same order with matching arguments. Implementations throw
 * {@link org.mpibuild.CommunicationException} when MPI reports an error.
 */
public interface Communicator extends AutoCloseable {

  /**
   * Returns the rank of the calling process in this communicator.
   *
   * @return the rank, from 0 to {@code size() - 1}
   */
  int rank();

  /**
   * Returns the number of ranks.
   *
   * @return the size, at least 1
   */
  int size();

  /**
   * Broadcasts the bytes between the buffer's position and its limit from {@code root} to every rank.
   * The buffer must be direct so that no copy is made; its position and limit are not changed.
   *
   * @param buffer a direct buffer holding at most {@code Integer.MAX_VALUE} remaining bytes, equal in
   *     size on every rank
   * @param root the rank whose bytes are sent
   */
  void broadcast(ByteBuffer buffer, int root);

  /**
   * Returns the element-wise maximum of {@code values} over all ranks.
   *
   * @param values this rank's values, of equal length on every rank
   * @return the maxima, on every rank
   */
  int[] allReduceMax(int[] values);

  /**
   * Gathers one byte array from every rank to every rank. Arrays may differ in length.
   *
   * @param mine this rank's contribution
   * @return every rank's contribution, indexed by rank
   */
  byte[][] allGather(byte[] mine);

  /**
   * Starts a broadcast like {@link #broadcast} and returns at once ({@code MPI_Ibcast}). The buffer must
   * not be touched until the request completes. Collectives started on one communicator are matched across
   * ranks in the order they were started, but MPI does not complete them in that order: test or await each
   * request on its own. By default the broadcast runs to completion before this returns.
   *
   * @param buffer a direct buffer, as for {@link #broadcast}
   * @param root the rank whose bytes are sent
   * @return the request
   */
  default Request iBroadcast(ByteBuffer buffer, int root) {
    broadcast(buffer, root);
    return Request.COMPLETED;
  }

  /**
   * Starts an all-reduce like {@link #allReduceMax} and returns at once ({@code MPI_Iallreduce}); the
   * maxima are written into {@code result} when the request completes. By default it runs to completion
   * before this returns.
   *
   * @param values this rank's values, of equal length on every rank
   * @param result where the maxima go, as long as {@code values}
   * @return the request
   */
  default Request iAllReduceMax(int[] values, int[] result) {
    System.arraycopy(allReduceMax(values), 0, result, 0, result.length);
    return Request.COMPLETED;
  }

  /**
   * Starts an element-wise reduction of {@code count} values of {@code type} over all ranks, leaving the
   * result on every rank ({@code MPI_Iallreduce}), and returns at once. Neither buffer may be touched until
   * the request completes. Collectives started on one communicator are matched across ranks in the order
   * they were started.
   *
   * @param send a direct buffer holding this rank's {@code count} values from its position, in native byte
   *     order
   * @param receive a direct buffer receiving the {@code count} results from its position; not {@code send}
   * @param count how many values, 1 or more, the same on every rank
   * @param type their element type
   * @param op the reduction
   * @return the request
   * @throws IllegalArgumentException if a buffer is not direct, or holds fewer than {@code count} values from
   *     its position (MPI would read or write past its limit); thrown before any communication
   * @throws UnsupportedOperationException if this binding has no typed reductions
   */
  default Request iAllReduce(ByteBuffer send, ByteBuffer receive, int count, Datatype type, ReduceOp op) {
    throw new UnsupportedOperationException(description() + " has no typed reductions");
  }

  /**
   * Reduces like {@link #iAllReduce} and returns once the results are in {@code receive}
   * ({@code MPI_Allreduce}). A blocking collective: MPI matches it only with the blocking all-reduce on the
   * other ranks, never with {@link #iAllReduce} or a persistent request, so every rank must choose it for the
   * same collective. By default {@link #iAllReduce} then {@link Request#await}, which the same default on the
   * other ranks matches.
   *
   * @param send a direct buffer holding this rank's {@code count} values from its position, in native byte
   *     order
   * @param receive a direct buffer receiving the {@code count} results from its position; not {@code send}
   * @param count how many values, 1 or more, the same on every rank
   * @param type their element type
   * @param op the reduction
   * @throws IllegalArgumentException as {@link #iAllReduce}
   * @throws UnsupportedOperationException if this binding has no typed reductions
   */
  default void allReduce(ByteBuffer send, ByteBuffer receive, int count, Datatype type, ReduceOp op) {
    iAllReduce(send, receive, count, type, op).await();
  }

  /**
   * Prepares a broadcast like {@link #broadcast} that is then started any number of times
   * ({@code MPI_Bcast_init} of MPI 4.0): each {@link PersistentRequest#start} broadcasts what the root's
   * buffer holds at that moment. Collective and possibly blocking until every rank has called it: every rank
   * prepares it, and starts it, in the same order as its other collectives on this communicator. The
   * buffer's position and limit are read once, here; the buffer must stay as it is, and must not be touched
   * while a start is in progress, until the request is closed.
   *
   * @param buffer a direct buffer, as for {@link #broadcast}
   * @param root the rank whose bytes are sent
   * @return the inactive request; the caller closes it
   * @throws IllegalArgumentException if the buffer is not direct
   * @throws UnsupportedOperationException if this binding has no persistent collectives
   *     ({@link #persistentCollectives} says which it has)
   */
  default PersistentRequest broadcastInit(ByteBuffer buffer, int root) {
    throw new UnsupportedOperationException(description() + " has no persistent collectives");
  }

  /**
   * Prepares an all-reduce like {@link #iAllReduce} that is then started any number of times
   * ({@code MPI_Allreduce_init} of MPI 4.0): each {@link PersistentRequest#start} reduces what {@code send}
   * holds at that moment into {@code receive}. Collective and possibly blocking until every rank has called
   * it, with the ordering rules of {@link #broadcastInit}. Neither buffer may be touched while a start is in
   * progress; both must stay valid until the request is closed.
   *
   * @param send a direct buffer of this rank's {@code count} values from its position, in native byte order
   * @param receive a direct buffer receiving the {@code count} results from its position; not {@code send}
   * @param count how many values, 1 or more, the same on every rank
   * @param type their element type
   * @param op the reduction
   * @return the inactive request; the caller closes it
   * @throws IllegalArgumentException as {@link #iAllReduce} does, before any communication
   * @throws UnsupportedOperationException if this binding has no persistent collectives
   */
  default PersistentRequest allReduceInit(ByteBuffer send, ByteBuffer receive, int count, Datatype type,
      ReduceOp op) {
    throw new UnsupportedOperationException(description() + " has no persistent collectives");
  }

  /** What {@link #persistentCollectives} says for a binding without them. */
  String NO_PERSISTENT_COLLECTIVES = "none: non-blocking collectives (MPI_Ibcast, MPI_Iallreduce)";

  /**
   * Says which persistent collectives {@link #broadcastInit} and {@link #allReduceInit} use, for doctor and
   * logs, for example {@code "MPI_Bcast_init and MPI_Allreduce_init (MPI 4.0)"}; by default
   * {@link #NO_PERSISTENT_COLLECTIVES}, for a binding whose {@code *Init} methods throw.
   *
   * @return a short description, starting with {@code "none"} when there are none
   */
  default String persistentCollectives() {
    return NO_PERSISTENT_COLLECTIVES;
  }

  /**
   * A collective prepared once and started any number of times ({@code MPI_Request} of a persistent
   * collective). Not thread-safe between starts: one start at a time, each completed before the next.
   */
  interface PersistentRequest extends AutoCloseable {
    /**
     * Starts the prepared collective ({@code MPI_Start}) and returns at once; the returned request completes
     * it. Every rank starts it, in the same order as its other collectives on the communicator.
     *
     * @return the request of this start
     * @throws IllegalStateException if the previous start's request has not been seen to complete (by its
     *     {@code test} or {@code await}), or this request is closed
     */
    Request start();

    /**
     * Frees the request ({@code MPI_Request_free}); nothing more may be started. Closing twice does
     * nothing.
     *
     * @throws IllegalStateException if a start is still in progress (await it first)
     */
    @Override
    void close();
  }

  /**
   * Checks an all-reduce's arguments as {@link #iAllReduce} documents, for the bindings: MPI gets the
   * buffers' addresses, not their limits, so what it would read or write out of bounds is refused before
   * any communication.
   *
   * @param send this rank's values
   * @param receive where the results go
   * @param count how many values
   * @param type their element type
   * @return the bytes of {@code count} values
   * @throws IllegalArgumentException if a buffer is not direct, or holds fewer than {@code count} values
   *     from its position, or {@code count} is below 1
   */
  static int reductionBytes(ByteBuffer send, ByteBuffer receive, int count, Datatype type) {
    if (!send.isDirect() || !receive.isDirect()) {
      throw new IllegalArgumentException("an all-reduce needs direct buffers");
    }
    if (count < 1) {
      throw new IllegalArgumentException("an all-reduce of " + count + " values");
    }
    long bytes = (long) count * type.bytes();
    if (send.remaining() < bytes || receive.remaining() < bytes) {
      throw new IllegalArgumentException("an all-reduce of " + count + " " + type + " values (" + bytes
          + " bytes) from " + send.remaining() + " bytes into " + receive.remaining());
    }
    return (int) bytes;
  }

  /** The element types of {@link #iAllReduce}: Java's, in native byte order. */
  enum Datatype {
    /** {@code int}, {@code MPI_INT}. */
    INT(4),
    /** {@code long}, {@code MPI_INT64_T}. */
    LONG(8),
    /** {@code float}, {@code MPI_FLOAT}. */
    FLOAT(4),
    /** {@code double}, {@code MPI_DOUBLE}. */
    DOUBLE(8);

    private final int bytes;

    Datatype(int bytes) {
      this.bytes = bytes;
    }

    /**
     * Returns the size of one value.
     *
     * @return its bytes
     */
    public int bytes() {
      return bytes;
    }
  }

  /** The reductions of {@link #iAllReduce}. */
  enum ReduceOp {
    /** {@code MPI_SUM}. */
    SUM,
    /** {@code MPI_MIN}. */
    MIN,
    /** {@code MPI_MAX}. */
    MAX
  }

  /**
   * Starts sending the bytes between the buffer's position and its limit to {@code dest}
   * ({@code MPI_Isend}). Not collective. Messages from one rank to another with the same tag arrive in
   * the order they were started. The buffer must not be touched until the request completes.
   *
   * @param buffer a direct buffer of at most {@code Integer.MAX_VALUE} remaining bytes
   * @param dest the receiving rank
   * @param tag the message tag, 0 or more
   * @return the request
   * @throws UnsupportedOperationException if this binding has no point-to-point messages
   */
  default Request iSend(ByteBuffer buffer, int dest, int tag) {
    throw new UnsupportedOperationException(description() + " does not carry point-to-point messages");
  }

  /**
   * Starts receiving into the bytes between the buffer's position and its limit from {@code source}
   * ({@code MPI_Irecv}). Not collective. The message must have exactly that many bytes.
   *
   * @param buffer a direct buffer
   * @param source the sending rank
   * @param tag the message tag, 0 or more
   * @return the request
   * @throws UnsupportedOperationException if this binding has no point-to-point messages
   */
  default Request iReceive(ByteBuffer buffer, int source, int tag) {
    throw new UnsupportedOperationException(description() + " does not carry point-to-point messages");
  }

  /**
   * Sends the bytes between the buffer's position and its limit to {@code dest} and returns when the buffer
   * may be reused ({@code MPI_Send}). Not collective. By default {@link #iSend} then {@link Request#await};
   * bindings with a direct call override it (one call instead of two, for small messages).
   *
   * @param buffer a direct buffer
   * @param dest the receiving rank
   * @param tag the message tag, 0 or more
   * @throws UnsupportedOperationException if this binding has no point-to-point messages
   */
  default void send(ByteBuffer buffer, int dest, int tag) {
    iSend(buffer, dest, tag).await();
  }

  /**
   * Receives a message of exactly the buffer's remaining bytes from {@code source} ({@code MPI_Recv}). Not
   * collective. By default {@link #iReceive} then {@link Request#await}.
   *
   * @param buffer a direct buffer
   * @param source the sending rank
   * @param tag the message tag, 0 or more
   * @throws UnsupportedOperationException if this binding has no point-to-point messages
   */
  default void receive(ByteBuffer buffer, int source, int tag) {
    iReceive(buffer, source, tag).await();
  }

  /**
   * Splits this communicator: ranks that pass the same {@code color} end up in one new communicator, in
   * the order of their ranks here ({@code MPI_Comm_split}). Collective. The caller closes the result.
   *
   * @param color this rank's group, non-negative
   * @return this rank's new communicator
   */
  Communicator split(int color);

  /**
   * Returns the thread support that MPI provides: whether a library thread may call MPI while the
   * program's threads do. By default {@link ThreadLevel#MULTIPLE}, right for bindings without MPI.
   *
   * @return the provided thread level
   */
  default ThreadLevel threadLevel() {
    return ThreadLevel.MULTIPLE;
  }

  /**
   * For bindings that implement {@link #allGather} with {@code MPI_Allgatherv}: where each rank's bytes
   * start in the gathered buffer.
   *
   * @param lengths every rank's byte count
   * @return the displacements, by rank
   * @throws IllegalStateException if the total does not fit one MPI count
   */
  static int[] displacements(int[] lengths) {
    int[] out = new int[lengths.length];
    long total = 0;
    for (int r = 0; r < lengths.length; r++) {
      out[r] = (int) total;
      total += lengths[r];
    }
    if (total > Integer.MAX_VALUE - 8) {
      throw new IllegalStateException("all-gather of " + total + " bytes is too large");
    }
    return out;
  }

  /** The MPI thread support levels, weakest first. */
  enum ThreadLevel {
    /** Only one thread exists. */
    SINGLE,
    /** Only the thread that initialized MPI calls it. */
    FUNNELED,
    /** Any thread calls MPI, never two at once. */
    SERIALIZED,
    /** Any thread calls MPI at any time. */
    MULTIPLE
  }

  /** A started non-blocking operation ({@code MPI_Request}). */
  interface Request {
    /** A request that has already completed. */
    Request COMPLETED = new Request() {
      @Override
      public boolean test() {
        return true;
      }

      @Override
      public void await() {}
    };

    /**
     * Returns whether the operation has completed, making progress on it ({@code MPI_Test}). Never blocks.
     *
     * @return true once complete
     */
    boolean test();

    /** Blocks until the operation has completed ({@code MPI_Wait}). */
    void await();

    /**
     * Sleeps for at most {@code nanos}, then tests. A binding that can be woken when the operation
     * completes (an in-process one, an MPI with a progress thread) overrides it to return as soon as it
     * has; by default it sleeps the whole time, which is what a rank that waits idly for MPI must do.
     *
     * @param nanos the longest sleep
     * @return true once complete
     */
    default boolean await(long nanos) {
      LockSupport.parkNanos(nanos);
      return test();
    }
  }

  /**
   * Splits this communicator into one communicator per shared-memory node ({@code MPI_Comm_split_type}
   * with {@code MPI_COMM_TYPE_SHARED}), keeping rank order. Collective. The caller closes the result.
   *
   * @return this rank's node communicator
   */
  Communicator splitByNode();

  /**
   * Ends the whole job at once, after printing the message. Used only when the ranks can no longer agree
   * on what to do next, so that no rank is left waiting. Does not return.
   *
   * @param message why, for the person who reads the job's output
   * @param errorCode the exit status mpirun should report
   */
  void abort(String message, int errorCode);

  /**
   * Describes the binding and communicator, for logs, for example {@code "mpi.jar COMM_WORLD (duplicate), 4 ranks"}.
   *
   * @return a short description
   */
  String description();

  /** Frees what the binding created for this communicator. Never finalizes MPI itself. */
  @Override
  default void close() {}
}
