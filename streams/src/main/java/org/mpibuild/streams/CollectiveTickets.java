package org.mpibuild.streams;

import java.util.Collections;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.LockSupport;
import org.mpibuild.spi.Communicator;

/**
 * The order in which one process starts its stream-ordered collectives on one communicator: a ticket is
 * taken when a collective is enqueued, and the collective may start only when its ticket is the next one.
 * Every {@link StreamOrderedMessages} on the same {@link Communicator} object shares one instance, so two
 * helpers on two device queues of one rank cannot reorder each other's collectives: MPI matches collectives
 * by the order they are started on each rank, and that order is then the order the program enqueued them
 * in, whatever the timing of the queues.
 */
final class CollectiveTickets {
  private static final Map<Communicator, CollectiveTickets> BY_COMM = Collections.synchronizedMap(new WeakHashMap<>());

  private final CopyOnWriteArrayList<Thread> waiters = new CopyOnWriteArrayList<>();
  private final Set<Long> abandoned = new HashSet<>();
  /** The persistent collectives the helpers on this communicator reuse (same sharing as the tickets). */
  final PersistentCollectives persistent = new PersistentCollectives();
  private long issued;
  private volatile long next;

  private CollectiveTickets() {}

  /** The tickets of {@code comm} (by identity: the same object, not an equal one). */
  static CollectiveTickets of(Communicator comm) {
    synchronized (BY_COMM) {
      return BY_COMM.computeIfAbsent(comm, c -> new CollectiveTickets());
    }
  }

  /** A progress thread to wake when the turn moves on. */
  void register(Thread progress) {
    synchronized (waiters) {
      waiters.add(progress);
    }
  }

  /**
   * Forgets a progress thread; the last one to go closes the persistent collectives.
   *
   * @return the keys of persistent requests that could not be closed (still in use by MPI)
   */
  java.util.List<PersistentCollectives.Key> unregister(Thread progress) {
    synchronized (waiters) {
      waiters.remove(progress);
      return waiters.isEmpty() ? persistent.closeAll() : java.util.List.of();
    }
  }

  /** Takes the next ticket; called when a collective is enqueued. */
  synchronized long take() {
    return issued++;
  }

  /** Whether the collective holding {@code ticket} may start now. */
  boolean isTurn(long ticket) {
    return next == ticket;
  }

  /** Called by the holder of the current ticket once it has started its MPI operations. */
  void advance() {
    synchronized (this) {
      next++;
      while (abandoned.remove(next)) {
        next++;
      }
    }
    for (Thread t : waiters) {
      LockSupport.unpark(t);
    }
  }

  /**
   * A collective that will never start (its helper was closed first) gives up its ticket, so that the
   * collectives after it on other queues are not held back for ever; the other ranks then wait for it
   * until their deadline, which names this rank.
   */
  void abandon(long ticket) {
    synchronized (this) {
      if (ticket != next) {
        if (ticket > next) {
          abandoned.add(ticket);
        }
        return;
      }
    }
    advance();
  }
}
