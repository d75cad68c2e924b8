package org.mpibuild.streams;

import java.util.concurrent.locks.LockSupport;

/**
 * The progress thread of one helper, apart from what it runs ({@link ProgressLoop}): started once, woken by
 * whoever gives it work, waited for at the close. While it runs, the communicator's {@link CollectiveTickets}
 * know it, so that a collective's turn moving on wakes it.
 */
final class ProgressThread {
  private final String name;
  private final CollectiveTickets tickets;
  private volatile Thread thread;

  /**
   * A thread not yet started.
   *
   * @param name for the thread's name, for example the queue
   * @param tickets the communicator's, which wake the thread when a turn moves on
   */
  ProgressThread(String name, CollectiveTickets tickets) {
    this.name = name;
    this.tickets = tickets;
  }

  /** Starts the thread on {@code loop}; once. */
  void start(Runnable loop) {
    if (thread != null) {
      throw new IllegalStateException("the progress thread of " + name + " was started already");
    }
    Thread t = new Thread(() -> {
      try {
        loop.run();
      } finally {
        tickets.unregister(Thread.currentThread());
      }
    }, "mpi-build-stream " + name);
    t.setDaemon(true);
    thread = t;
    tickets.register(t);
    t.start();
  }

  /** Wakes the thread if it parks, or makes its next park return at once. Cheap, safe from any thread. */
  void wake() {
    LockSupport.unpark(thread);
  }

  /** Whether the thread has run its loop to the end (after the close), so that nobody moves operations on. */
  boolean ended() {
    Thread t = thread;
    return t != null && !t.isAlive();
  }

  /**
   * Waits for the thread to end, at most {@code millis}; keeps the caller's interrupt. Returns at once on the thread
   * itself (a close from an action of a future it completes): it ends once that action returns.
   */
  void join(long millis) {
    if (Thread.currentThread() == thread) {
      return;
    }
    try {
      thread.join(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
