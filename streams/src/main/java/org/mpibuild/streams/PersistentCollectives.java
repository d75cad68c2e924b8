package org.mpibuild.streams;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/**
 * The persistent collectives ({@link Communicator#allReduceInit}, {@link Communicator#broadcastInit}) that the
 * stream-ordered collectives of one process reuse on one communicator, shared like {@link CollectiveTickets}
 * by every {@link StreamOrderedMessages} on the same {@link Communicator} object.
 *
 * <p><b>The same decision on every rank.</b> MPI matches a persistent collective's init and starts only with
 * the same calls on the other ranks, never with a non-blocking collective, so a rank that starts a persistent
 * request where another calls {@code MPI_Iallreduce} deadlocks. Every decision here is therefore taken from
 * facts that are the same on every rank: whether the communicator offers persistent collectives (the same
 * library on every rank), and how many times an operation of the same signature (kind, size, type, reduction,
 * root; never the device buffer, nor the queue or messenger it came from) was started before on the
 * communicator. {@link #use} is called only at the operation's turn (ticket order), which is the same on every
 * rank, so the count is too. The first use of a signature is a non-blocking collective; the second prepares
 * the persistent request (collective, in the same place of the order on every rank) and starts it; later uses
 * start it again.
 *
 * <p><b>Buffers.</b> An entry owns one pair of direct buffers, bound to its request for its life. The
 * operation's own staging buffers (one pair per operation, filled and emptied by its queue) are copied into
 * them at its turn and out of them when MPI has completed; an entry belongs to one operation from its start
 * until that copy ({@link Entry#release}), and a later operation of the same signature, on any queue, waits
 * for it at its turn. Copying, instead of handing the device the entry's buffers, keeps two queues of one rank
 * (which are not ordered with each other) from ever reading or writing an entry's buffers while MPI uses them,
 * and costs a host copy of the data, small beside the MPI operation.
 */
final class PersistentCollectives {
  /** The signature of an operation: what a persistent request is prepared for. */
  record Key(boolean broadcast, int bytes, Datatype type, ReduceOp op, int root) {}

  /** One persistent request with its buffers. Its methods are called by any helper's progress thread. */
  static final class Entry {
    final ByteBuffer send;
    final ByteBuffer receive;
    final Communicator.PersistentRequest request;
    private Object owner;
    private Communicator.Request active;

    Entry(ByteBuffer send, ByteBuffer receive, Communicator.PersistentRequest request) {
      this.send = send;
      this.receive = receive;
      this.request = request;
    }

    /** Whether a new start may begin: no operation owns the entry and the last start has completed. */
    synchronized boolean available() {
      if (owner != null) {
        return false;
      }
      if (active != null) {
        if (!active.test()) {
          return false; // the start of an operation that failed (its helper closed): MPI still owns the buffers
        }
        active = null;
      }
      return true;
    }

    /** Starts the request for {@code op}, which owns the entry until {@link #release}. */
    synchronized Communicator.Request start(Object op) {
      owner = op;
      active = request.start();
      return new Communicator.Request() {
        @Override
        public boolean test() {
          synchronized (Entry.this) {
            if (active == null) {
              return true;
            }
            if (active.test()) {
              active = null;
              return true;
            }
            return false;
          }
        }

        @Override
        public void await() {
          while (!test()) {
            Thread.onSpinWait();
          }
        }
      };
    }

    /** Ends {@code op}'s ownership: after it copied the results out, or when it failed. */
    synchronized void release(Object op) {
      if (owner == op) {
        owner = null;
      }
    }

    synchronized boolean close() {
      if (!available()) {
        return false;
      }
      request.close();
      return true;
    }
  }

  private final Map<Key, Integer> uses = new HashMap<>();
  private final Map<Key, Entry> entries = new HashMap<>();

  /**
   * Counts a use of {@code key}; called only at the operation's turn, on the progress thread holding it.
   *
   * @return the entry to start, prepared now at the second use; null for the first use, which is a
   *     non-blocking collective
   */
  synchronized Entry use(Communicator comm, Key key) {
    int n = uses.merge(key, 1, Integer::sum);
    if (n < 2) {
      return null;
    }
    Entry e = entries.get(key);
    if (e == null) {
      ByteBuffer send = ByteBuffer.allocateDirect(key.bytes()).order(ByteOrder.nativeOrder());
      if (key.broadcast()) {
        e = new Entry(send, send, comm.broadcastInit(send, key.root()));
      } else {
        ByteBuffer receive = ByteBuffer.allocateDirect(key.bytes()).order(ByteOrder.nativeOrder());
        e = new Entry(send, receive, comm.allReduceInit(send, receive, key.bytes() / key.type().bytes(), key.type(),
            key.op()));
      }
      entries.put(key, e);
    }
    return e;
  }

  /** The entry already prepared for {@code key}, or null: used to wait at a turn until it is available. */
  synchronized Entry prepared(Key key) {
    return entries.get(key);
  }

  /**
   * Closes every request, once no helper on the communicator is left: a request still in use by MPI (the
   * start of an operation that failed) is left to MPI, since freeing it would fail.
   *
   * @return the keys whose requests could not be closed
   */
  synchronized List<Key> closeAll() {
    List<Key> left = new ArrayList<>();
    for (Map.Entry<Key, Entry> e : entries.entrySet()) {
      try {
        if (!e.getValue().close()) {
          left.add(e.getKey());
        }
      } catch (RuntimeException ex) {
        left.add(e.getKey());
      }
    }
    entries.clear();
    uses.clear();
    return left;
  }
}
