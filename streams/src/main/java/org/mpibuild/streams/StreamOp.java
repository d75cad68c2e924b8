package org.mpibuild.streams;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/**
 * One stream-ordered operation of {@link StreamOrderedMessages}: what it is, its buffers and device steps, where
 * it stands, and, for a collective, its MPI requests. Touched by one thread at a time once added: the progress
 * thread, or, for an operation of the queue's ({@link #onQueue}), whichever thread claimed it ({@link #claim});
 * the fields guarded by this object's lock, {@link #request} and {@link #beforeSignalled} are read by others.
 */
final class StreamOp {
  enum Kind { SEND, RECEIVE, BROADCAST, ALL_REDUCE }

  /**
   * Where an operation stands. A collective, at its turn, checks with every rank that they call the same
   * collective ({@code CHECK}; where they do not, {@code NAMES} finds who differs in what), holding the turn
   * until its data collective starts ({@code WAIT_MPI}).
   */
  enum State { WAIT_DEVICE, CHECK, NAMES, WAIT_MPI, WAIT_WRITE, DONE }

  /** Who runs an operation of the queue's ({@link #onQueue}): nobody yet, the queue's thread, the progress thread. */
  static final int NOBODY = 0;
  static final int QUEUE = 1;
  static final int PROGRESS = 2;

  final Kind kind;
  /** The operation's data; an all-reduce run by its queue gets the device's memory when it runs. */
  ByteBuffer staging;
  final int peer;
  final int tag;
  final DeviceStep before;
  final Gate gate;
  final DeviceStep after;
  final CompletableFuture<Void> future = new CompletableFuture<>();
  boolean beforeWakes;
  /** Whether {@link #before} has finished (or failed), once seen: never asked again. */
  boolean beforeDone;
  /** Set by the device's callback (any thread) once {@link #before} has finished or failed. */
  volatile boolean beforeSignalled;
  State state;
  /** Its MPI request once started; volatile, since the progress thread checks a queue's receive for it. */
  volatile Communicator.Request request;
  // collectives
  long ticket = -1;
  ByteBuffer receive;
  int count;
  Datatype type;
  ReduceOp reduceOp;
  /** The check's (or the naming's) all-reduce: this rank's longs, every rank's maximum, the request. */
  ByteBuffer statusOut;
  ByteBuffer statusIn;
  Communicator.Request statusRequest;
  /** Whether every rank called the same collective, without a failure before it; its data may start. */
  boolean checked;
  List<Communicator.Request> arrivals = List.of();
  /** On rank 0, the bytes the arrivals are received into, from the pool; or null. */
  ByteBuffer arrivalBytes;
  /** An in-place all-reduce's results, from the pool, until copied out; or null. */
  ByteBuffer results;
  /** An in-place all-reduce's copy of its values that MPI reads, from the pool; or null. */
  ByteBuffer sent;
  /** The persistent request this collective started, owned until its results are copied out; or null. */
  PersistentCollectives.Entry entry;
  RuntimeException localFailure;
  /**
   * Whether it takes part as closed: its helper was closed before it started ({@link Closing}), so at its turn it
   * starts at once, with "closed" as its status, and fails on every rank.
   */
  boolean closing;
  /**
   * Run by the device's own queue (see {@link QueuedOperation}), on the thread that runs
   * its commands, rather than by the progress thread; set before the operation is added.
   */
  boolean onQueue;
  /** Who runs an operation of the queue's: claimed once, under this object's lock. */
  int driver = NOBODY;
  /** The queue's command that runs an operation of the queue's, once enqueued: polled only for its failure. */
  DeviceStep command;
  /** Whether {@link #releaseSteps} ran: a command handed over later is released at once. */
  boolean stepsReleased;
  /** The order the helper was asked for its operations in. */
  long seq;
  /** Whether MPI has completed every request of this operation (nothing of MPI's uses its buffers any more). */
  boolean mpiDone;
  long startedAt;

  StreamOp(Kind kind, ByteBuffer staging, int peer, int tag, DeviceStep before,
      Gate gate, DeviceStep after) {
    this.kind = kind;
    this.staging = staging;
    this.peer = peer;
    this.tag = tag;
    this.before = before;
    this.gate = gate;
    this.after = after;
    this.state = kind == Kind.RECEIVE ? State.WAIT_MPI : State.WAIT_DEVICE;
  }

  /** Claims an operation of the queue's for {@code who}, once: whether it is now {@code who}'s. */
  synchronized boolean claim(int who) {
    if (driver == NOBODY) {
      driver = who;
    }
    return driver == who;
  }

  synchronized int driver() {
    return driver;
  }

  boolean collective() {
    return kind == Kind.BROADCAST || kind == Kind.ALL_REDUCE;
  }

  /** What every rank must call alike at this collective's turn. */
  CollectiveSignature signature() {
    return kind == Kind.BROADCAST
        ? CollectiveSignature.broadcast(staging.remaining() - StreamOrderedMessages.BROADCAST_HEADER, peer)
        : CollectiveSignature.allReduce(count, type, reduceOp);
  }

  /** The signature a persistent request is prepared for: never the buffers, so it repeats across calls. */
  PersistentCollectives.Key key() {
    return kind == Kind.BROADCAST
        ? new PersistentCollectives.Key(true, staging.remaining(), null, null, peer)
        : new PersistentCollectives.Key(false, count * type.bytes(), type, reduceOp, -1);
  }

  String describe() {
    return switch (kind) {
      case SEND -> "send of " + staging.remaining() + " bytes to rank " + peer + " (tag " + tag + ")";
      case RECEIVE -> "receive of " + staging.remaining() + " bytes from rank " + peer + " (tag " + tag + ")";
      case BROADCAST -> "broadcast of " + (staging.remaining() - StreamOrderedMessages.BROADCAST_HEADER)
          + " bytes from rank " + peer + " (collective #" + ticket + ")";
      case ALL_REDUCE -> "all-reduce (" + reduceOp + " of " + count + " " + type + ") (collective #" + ticket + ")";
    };
  }

  /**
   * Releases the device steps' resources (events); {@code completed}: the operation completed, so nothing uses its
   * buffers any more ({@link DeviceStep#releaseCompleted}).
   */
  void releaseSteps(boolean completed) {
    DeviceStep c;
    synchronized (this) {
      c = command;
      command = null;
      stepsReleased = true;
    }
    release(c, completed);
    release(before, completed);
    release(after, completed);
  }

  private static void release(DeviceStep step, boolean completed) {
    if (step == null) {
      return;
    }
    if (completed) {
      step.releaseCompleted();
    } else {
      step.release();
    }
  }
}
