package org.mpibuild.streams;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/**
 * The steps of a stream-ordered collective, on the progress thread ({@link ProgressLoop}) or on the device
 * queue's ({@link QueueRuns}): a collective starts at its ticket's turn once its device step has finished (or
 * failed: its status then travels with it), with an arrival message for the deadline and, where the
 * communicator offers them and its signature repeats, a persistent request; it ends when data, status and
 * arrivals are in, with one verdict on every rank.
 */
final class CollectiveSteps {
  /** The exit status of the abort at a missed deadline. */
  static final int ABORT_CODE = 4;
  /**
   * The bit of a status word that says its rank's helper was closed before the collective started ({@link Closing});
   * above every rank + 1 (bits 32-61), so that the all-reduce MAX of the words names a closed rank first.
   */
  private static final long CLOSED = 1L << 62;
  /** What every rank but 0 sends as its arrival: one byte, never written. */
  private static final ByteBuffer ARRIVAL = ByteBuffer.allocateDirect(1);

  private final Communicator comm;
  private final Duration deadline;
  private final IntFunction<String> deviceCodes;
  private final CollectiveTickets tickets;
  private final StagingPool pool;
  /** Where a collective that failed on every rank, or missed its deadline, ends. */
  private final OperationTable table;
  /** Whether the communicator offers persistent collectives: the same on every rank (the same library). */
  private final boolean persistentOffered;
  private final AtomicLong persistentStarts = new AtomicLong();

  CollectiveSteps(Communicator comm, Duration deadline, IntFunction<String> deviceCodes, CollectiveTickets tickets,
      StagingPool pool, OperationTable table) {
    this.comm = comm;
    this.deadline = deadline;
    this.deviceCodes = deviceCodes;
    this.tickets = tickets;
    this.pool = pool;
    this.table = table;
    // "none" starts the description of every binding without them (the SPI's contract), which may say more:
    // mpi.jar's is NO_PERSISTENT_COLLECTIVES followed by why
    this.persistentOffered = !comm.persistentCollectives().startsWith("none");
  }

  /** How many collectives started a persistent request. */
  long persistentStarts() {
    return persistentStarts.get();
  }

  /** When a started collective's deadline passes (System.nanoTime), or Long.MAX_VALUE without one. */
  long deadlineOf(StreamOp op) {
    return started(op) && deadline.toNanos() > 0 ? op.startedAt + limit() : Long.MAX_VALUE;
  }

  /** Whether the collective has started (its check, or its data). */
  private static boolean started(StreamOp op) {
    return op.state == StreamOp.State.CHECK || op.state == StreamOp.State.NAMES || op.state == StreamOp.State.WAIT_MPI;
  }

  /** Rank 0 waits the deadline; the others twice as long, so that rank 0, which can name the absent, goes first. */
  long limit() {
    return comm.rank() == 0 ? deadline.toNanos() : 2 * deadline.toNanos();
  }

  /** Moves a collective on as far as it can in this pass. */
  void step(StreamOp op, ProgressPass pass) {
    switch (op.state) {
      case WAIT_DEVICE -> {
        if (deviceReady(op, pass) && tickets.isTurn(op.ticket)) {
          startCheck(op); // the turn is held until the data collective starts
          op.state = StreamOp.State.CHECK;
          pass.moved = true;
        }
      }
      case CHECK, NAMES -> {
        if (op.checked ? startDataIfFree(op, pass) : checkDone(op, pass)) {
          pass.moved = true;
        } else if (pastDeadline(op)) {
          missedDeadline(op);
          pass.moved = true;
        }
      }
      case WAIT_MPI -> {
        // one test at a time, in order: each MPI test moves every request, so the later ones are asked only
        // once the earlier have completed (a test costs a call into MPI, for the queue's thread in its loop)
        if (op.request.test() && arrived(op)) {
          dataDone(op);
          pass.moved = true;
        } else if (pastDeadline(op)) {
          missedDeadline(op);
          pass.moved = true;
        }
      }
      case WAIT_WRITE -> pass.awaitWrite(op);
      default -> { }
    }
  }

  private boolean pastDeadline(StreamOp op) {
    return deadline.toNanos() > 0 && System.nanoTime() - (op.startedAt + limit()) > 0;
  }

  /**
   * Whether the device work before the collective has finished, or failed: its status then travels with it; one
   * that takes part as closed ({@link Closing}) does not wait for it.
   */
  private static boolean deviceReady(StreamOp op, ProgressPass pass) {
    if (op.before == null || op.localFailure != null || op.closing) {
      return true;
    }
    try {
      return pass.beforeFinished(op);
    } catch (RuntimeException e) {
      op.localFailure = e; // still takes part, with its status, so that no rank waits for ever
      return true;
    }
  }

  /**
   * Whether the check (or the naming after it) has completed, and what follows: the data collective where every
   * rank called the same one without a failure; else the same failure on every rank, before any data moved.
   */
  private boolean checkDone(StreamOp op, ProgressPass pass) {
    if (!op.statusRequest.test() || !arrived(op)) {
      return false;
    }
    if (op.state == StreamOp.State.NAMES) {
      String message = CollectiveSignature.mismatch(op.statusIn, comm.size(), op.ticket);
      endCheck(op);
      table.fail(op, new IllegalStateException(message, op.localFailure));
      return true;
    }
    if (!CollectiveSignature.agreed(op.statusIn)) {
      // the rare path: who differs in what, from every rank's pair
      pool.give(op.statusOut);
      pool.give(op.statusIn);
      int bytes = Long.BYTES * CollectiveSignature.namesLongs(comm.size());
      op.statusOut = pool.take(bytes);
      op.statusIn = pool.take(bytes);
      op.signature().writeNames(op.statusOut, comm.rank(), comm.size());
      op.statusRequest = comm.iAllReduce(op.statusOut, op.statusIn, CollectiveSignature.namesLongs(comm.size()),
          Datatype.LONG, ReduceOp.MAX);
      op.state = StreamOp.State.NAMES;
      return true;
    }
    long word = CollectiveSignature.status(op.statusIn);
    if (word != 0) {
      String message = failureMessage(op, word);
      endCheck(op);
      table.fail(op, new IllegalStateException(message, op.localFailure));
      return true;
    }
    op.checked = true;
    startDataIfFree(op, pass);
    return true;
  }

  /** Gives back the check's buffers, once its requests and the arrivals have completed. */
  private void endCheck(StreamOp op) {
    op.mpiDone = true;
    releaseResults(op);
  }

  /** Starts the data collective if its persistent request, if any, is free; the turn passes on then. */
  private boolean startDataIfFree(StreamOp op, ProgressPass pass) {
    if (!persistentAvailable(op, pass)) {
      return false;
    }
    try {
      op.request = startData(op);
    } finally {
      tickets.advance();
      pool.give(op.statusOut);
      pool.give(op.statusIn);
      op.statusOut = null;
      op.statusIn = null;
    }
    op.state = StreamOp.State.WAIT_MPI;
    return true;
  }

  /** After the data collective: the results out, the gate open (a broadcast's header says the root's status). */
  private void dataDone(StreamOp op) {
    op.mpiDone = true;
    long word = statusWord(op);
    if (word != 0) {
      // nothing reaches the operation's own buffers: an all-reduce's device buffer keeps its values
      releaseResults(op);
      table.fail(op, new IllegalStateException(failureMessage(op, word), op.localFailure));
      return;
    }
    copyOut(op);
    if (op.gate != null) {
      op.gate.open();
      op.state = StreamOp.State.WAIT_WRITE;
    } else {
      op.state = StreamOp.State.DONE;
    }
  }

  /**
   * At a collective's turn, whether the persistent request of its signature (if one was prepared) is free: the
   * previous operation of that signature, on this helper or another on the communicator, has copied its
   * results out. The turn is held meanwhile; that operation started before, on every rank, so it completes.
   */
  private boolean persistentAvailable(StreamOp op, ProgressPass pass) {
    if (!persistentOffered) {
      return true;
    }
    PersistentCollectives.Entry e = tickets.persistent.prepared(op.key());
    if (e == null || e.available()) {
      return true;
    }
    pass.mpi = true; // poll: the owner may be another helper's operation
    return false;
  }

  /**
   * The byte order of a broadcast header's status word, whatever the order of the buffer it lies in: the root
   * writes it and every receiver reads it from buffers that each rank's caller chose.
   */
  private static final ByteOrder HEADER_ORDER = ByteOrder.BIG_ENDIAN;

  /** The status word of a completed data collective: the root's header of a broadcast; 0 for an all-reduce. */
  private static long statusWord(StreamOp op) {
    if (op.kind != StreamOp.Kind.BROADCAST) {
      return 0; // its status travelled with the check
    }
    ByteBuffer header = op.entry != null ? op.entry.send : op.staging;
    return header.duplicate().order(HEADER_ORDER).getLong(op.entry != null ? 0 : op.staging.position());
  }

  /** Frees what a completed collective holds from MPI (its persistent request, its in-place copies). */
  private void releaseResults(StreamOp op) {
    if (op.entry != null) {
      op.entry.release(op);
      op.entry = null;
    }
    pool.give(op.results);
    pool.give(op.sent);
    op.results = null;
    op.sent = null;
    // every request of the collective has completed (data, status, arrivals)
    pool.give(op.statusOut);
    pool.give(op.statusIn);
    pool.give(op.arrivalBytes);
    op.statusOut = null;
    op.statusIn = null;
    op.arrivalBytes = null;
  }

  /**
   * Copies the results of a persistent start, or of an in-place all-reduce, into the operation's own buffer,
   * and frees the entry or the pool's buffer. Only for a collective that succeeded on every rank.
   */
  private void copyOut(StreamOp op) {
    if (op.entry != null) {
      if (op.kind == StreamOp.Kind.BROADCAST) {
        op.staging.duplicate().put(op.entry.send.duplicate().clear());
      } else {
        op.receive.duplicate().put(op.entry.receive.duplicate().clear().limit(op.count * op.type.bytes()));
      }
    } else if (op.results != null) {
      op.receive.duplicate().put(op.results.duplicate());
    }
    releaseResults(op);
  }

  /**
   * Starts the operation's data collective: a persistent request when the communicator offers them and its
   * signature repeats (the same decision on every rank, see {@link PersistentCollectives}), else non-blocking.
   */
  private Communicator.Request startData(StreamOp op) {
    PersistentCollectives.Entry e = persistentOffered ? tickets.persistent.use(comm, op.key()) : null;
    if (e == null) {
      if (op.kind == StreamOp.Kind.BROADCAST) {
        return comm.iBroadcast(op.staging, op.peer);
      }
      ByteBuffer from = op.staging;
      ByteBuffer into = op.receive;
      if (op.receive == op.staging) {
        // In place, on memory that may be a mapped device buffer, which the program may release once the
        // gate has opened: MPI gets copies from the pool, which outlive a collective abandoned in flight, and
        // copyOut brings the results back.
        int bytes = op.count * op.type.bytes();
        from = op.sent = pool.take(bytes);
        from.put(op.staging.duplicate().limit(op.staging.position() + bytes)).flip();
        into = op.results = pool.take(bytes);
      }
      return comm.iAllReduce(from, into, op.count, op.type, op.reduceOp);
    }
    // The operation's own staging buffers were filled by its queue before its turn, and are emptied by it
    // after copyOut; only this thread, holding the turn and then the entry, touches the entry's buffers.
    ByteBuffer from = op.staging.duplicate();
    if (op.kind == StreamOp.Kind.ALL_REDUCE) {
      from.limit(from.position() + op.count * op.type.bytes());
    }
    e.send.duplicate().clear().put(from);
    op.entry = e;
    Communicator.Request r = e.start(op);
    persistentStarts.incrementAndGet();
    return r;
  }

  /**
   * Starts, at the collective's turn, its arrival message and its check: one all-reduce of what this rank calls
   * and its status ({@link CollectiveSignature}).
   */
  private void startCheck(StreamOp op) {
    long word = 0;
    if (op.closing) {
      word = CLOSED | (long) (comm.rank() + 1) << 32;
    } else if (op.localFailure != null) {
      int code = op.localFailure instanceof DeviceFailure f ? f.code() : 0;
      word = ((long) (comm.rank() + 1) << 32) | (code & 0xffffffffL);
    }
    op.arrivals = announce(op);
    op.startedAt = System.nanoTime();
    if (op.kind == StreamOp.Kind.BROADCAST && comm.rank() == op.peer) {
      op.staging.duplicate().order(HEADER_ORDER).putLong(op.staging.position(), word);
    }
    op.statusOut = pool.take(Long.BYTES * CollectiveSignature.CHECK_LONGS);
    op.statusIn = pool.take(Long.BYTES * CollectiveSignature.CHECK_LONGS);
    op.signature().writeCheck(op.statusOut, word);
    op.statusRequest = comm.iAllReduce(op.statusOut, op.statusIn, CollectiveSignature.CHECK_LONGS, Datatype.LONG,
        ReduceOp.MAX);
  }

  /** The status word, read the same way on every rank, as a message. */
  private String failureMessage(StreamOp op, long word) {
    int failed = (int) ((word & ~CLOSED) >>> 32) - 1;
    int code = (int) word;
    return op.describe() + " failed: rank " + failed + ((word & CLOSED) != 0
        ? "'s helper was closed before the collective started"
        : "'s device work before it failed"
            + (code != 0 ? " (" + deviceCodes.apply(code) + ")" : " (its own future has the reason)"))
        + (op.kind == StreamOp.Kind.ALL_REDUCE ? "; every rank's buffer keeps its own values"
            : "; the receivers' buffers are undefined");
  }

  /**
   * Every rank but 0 sends its arrival (all from one byte that nobody writes); rank 0 receives them, each into a
   * byte of its own from the pool. Empty when the binding carries no messages.
   */
  private List<Communicator.Request> announce(StreamOp op) {
    List<Communicator.Request> out = new ArrayList<>();
    try {
      if (comm.rank() != 0) {
        out.add(comm.iSend(ARRIVAL.duplicate(), 0, StreamOrderedMessages.ARRIVAL_TAG));
      } else if (comm.size() > 1) {
        op.arrivalBytes = pool.take(comm.size() - 1);
        for (int r = 1; r < comm.size(); r++) {
          out.add(comm.iReceive(op.arrivalBytes.slice(r - 1, 1), r, StreamOrderedMessages.ARRIVAL_TAG));
        }
      }
    } catch (UnsupportedOperationException e) {
      out.clear(); // a binding without point-to-point messages: absent ranks go unnamed
    }
    return out;
  }

  /** Whether every arrival of the collective has completed; stops at the first that has not. */
  private static boolean arrived(StreamOp op) {
    for (Communicator.Request a : op.arrivals) {
      if (!test(a)) {
        return false;
      }
    }
    return true;
  }

  private static boolean test(Communicator.Request r) {
    try {
      return r.test();
    } catch (UnsupportedOperationException e) {
      return true;
    }
  }

  /** Fails the collective naming who never came, then aborts the job: MPI cannot cancel it. */
  private void missedDeadline(StreamOp op) {
    String within = " within " + deadline.toMillis() + " ms of starting it";
    String message;
    if (comm.rank() == 0 && !op.arrivals.isEmpty()) {
      List<Integer> absent = new ArrayList<>();
      for (int i = 0; i < op.arrivals.size(); i++) {
        if (!test(op.arrivals.get(i))) {
          absent.add(i + 1);
        }
      }
      message = op.describe() + " failed: ranks " + absent + " of " + comm.size() + " did not start it" + within;
    } else {
      message = op.describe() + " failed: rank " + comm.rank() + " waited for the other ranks" + within
          + " (twice the deadline); rank 0, which names the absent ranks, did not report: it may be absent itself";
    }
    table.fail(op, new IllegalStateException(message + "; aborting the job, since MPI cannot cancel a collective that "
        + "other ranks have entered"));
    try {
      comm.abort("mpi-build: " + message, ABORT_CODE);
    } catch (RuntimeException e) {
      // an abort that returns (in-process tests): the future has failed already
    }
  }
}
