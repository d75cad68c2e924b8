package org.mpibuild.spi;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The open or closed state of something that holds native handles (a loaded program, a backend's
 * queue, a messenger), so that a released handle never reaches native code:
 *
 * <ul>
 *   <li>every call that hands out a handle, or passes one to native code, runs inside {@link #enter()}
 *       (or calls {@link #check()} when it only hands a handle out), which throws
 *       {@code IllegalStateException} naming what was closed and why once {@link #close(String)} ran;
 *   <li>{@link #close(String)} marks it closed first, then waits for the uses in progress on other threads
 *       to end (a lock and a count, no spinning, and a bound), then closes its dependents (what was made
 *       from it, for example the programs of a backend) with the same reason; only then may the caller
 *       release the handles, and only the first caller is told to.
 * </ul>
 *
 * <p>Thread-safe. A use on the thread that closes does not count (closing from inside a use is allowed).
 */
public final class UseGuard {
  /** How long {@link #close(String)} waits for uses in progress on other threads. */
  static final long CLOSE_WAIT_MILLIS = 30_000;

  /** Something made from a guarded object, closed with it. */
  @FunctionalInterface
  public interface Dependent {
    /**
     * Closes this dependent because its owner closed.
     *
     * @param why the reason later uses will be told, for example "its MpiBuild was closed"
     */
    void close(String why);
  }

  /** A use in progress; closing it ends the use. */
  public interface Use extends AutoCloseable {
    /** Ends the use. */
    @Override
    void close();
  }

  private final String what;
  private final Set<Dependent> dependents = new LinkedHashSet<>();
  private final List<Thread> users = new ArrayList<>();
  private String closedBecause;

  /**
   * An open guard.
   *
   * @param what what it guards, for messages, for example {@code "kernel saxpy"}
   */
  public UseGuard(String what) {
    this.what = what;
  }

  /**
   * Starts a use.
   *
   * @return the use, to close when the native call has returned
   * @throws IllegalStateException naming what was closed and why, once closed
   */
  public Use enter() {
    Thread me = Thread.currentThread();
    synchronized (this) {
      check();
      users.add(me);
    }
    return () -> {
      synchronized (UseGuard.this) {
        users.remove(me);
        UseGuard.this.notifyAll();
      }
    };
  }

  /**
   * Throws if closed.
   *
   * @throws IllegalStateException naming what was closed and why
   */
  public synchronized void check() {
    if (closedBecause != null) {
      throw new IllegalStateException(what + ": " + closedBecause);
    }
  }

  /** @return whether {@link #close(String)} has run */
  public synchronized boolean isClosed() {
    return closedBecause != null;
  }

  /**
   * Registers a dependent, closed (with the guard's reason) when the guard closes.
   *
   * @param dependent what was made from the guarded object
   * @throws IllegalStateException if the guard is closed (the dependent is closed first)
   */
  public void adopt(Dependent dependent) {
    String why;
    synchronized (this) {
      why = closedBecause;
      if (why == null) {
        dependents.add(dependent);
        return;
      }
    }
    dependent.close(why);
    check();
  }

  /**
   * Forgets a dependent that closed on its own.
   *
   * @param dependent what {@link #adopt} registered
   */
  public synchronized void forget(Dependent dependent) {
    dependents.remove(dependent);
  }

  /**
   * Closes this guard, as {@link #close(String)} does, and makes {@code owner} forget {@code self}, the
   * dependent it adopted: the one way for a dependent to close, whether on its own or with its owner.
   *
   * @param owner the guard that adopted {@code self}, or null
   * @param self what this guard's object registered with {@code owner}
   * @param why why it closed, for the messages of later uses
   * @return true for the one caller that must release the handles
   */
  public boolean closeAsDependent(UseGuard owner, Dependent self, String why) {
    if (!close(why)) {
      return false;
    }
    if (owner != null) {
      owner.forget(self);
    }
    return true;
  }

  /**
   * Closes: later uses throw, naming {@code why}; waits for the uses in progress on other threads; closes the
   * dependents with the same reason. Only the first call returns true: that caller releases the handles.
   *
   * @param why what later uses will be told, for example {@code "it was closed"}
   * @return whether this call closed it
   * @throws IllegalStateException if uses on other threads did not end within 30 s; the handles must then
   *     be left unreleased (a leak, never a crash)
   */
  public boolean close(String why) {
    List<Dependent> toClose;
    synchronized (this) {
      if (closedBecause != null) {
        return false;
      }
      closedBecause = why;
      long deadline = System.nanoTime() + CLOSE_WAIT_MILLIS * 1_000_000;
      Thread me = Thread.currentThread();
      while (users.stream().anyMatch(t -> t != me)) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw new IllegalStateException(what + ": still in use on thread(s) " + users.stream().filter(t -> t != me)
              .map(Thread::getName).distinct().toList() + " " + CLOSE_WAIT_MILLIS / 1000 + " s after close began; its "
              + "native objects are left unreleased");
        }
        try {
          wait(Math.max(1, left / 1_000_000));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException(what + ": interrupted while waiting for its uses to end; its native "
              + "objects are left unreleased", e);
        }
      }
      toClose = new ArrayList<>(dependents);
      dependents.clear();
    }
    RuntimeException first = null;
    for (Dependent d : toClose) {
      try {
        d.close(why);
      } catch (RuntimeException e) {
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
    return true;
  }

  @Override
  public String toString() {
    return what;
  }
}
