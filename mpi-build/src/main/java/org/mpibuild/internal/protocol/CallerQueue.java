package org.mpibuild.internal.protocol;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.mpibuild.internal.comm.Backoff;
import org.mpibuild.spi.Communicator;

/**
 * The calls posted by the library thread, in the order posted, and those the program's thread has
 * started and not yet seen complete. Shared by the wrappers of one instance's communicators.
 */
final class CallerQueue {
  private final ConcurrentLinkedQueue<Call> posted = new ConcurrentLinkedQueue<>();
  private final List<Call> started = new ArrayList<>();
  private volatile Thread idler;

  /**
   * On the program's thread: starts {@code start} now, and keeps it with the calls in flight; the library
   * thread sees it complete as it sees a posted call.
   */
  synchronized Call startHere(Supplier<Communicator.Request> start) {
    Call c = new Call(start);
    c.request = start.get();
    started.add(c);
    return c;
  }

  /** On the library thread: posts {@code start} for the program's thread, and wakes it if it waits. */
  Call post(Supplier<Communicator.Request> start) {
    Call c = new Call(start);
    posted.add(c);
    Thread t = idler;
    if (t != null) {
      LockSupport.unpark(t);
    }
    return c;
  }

  /**
   * On the program's thread: starts every posted call, in order, and tests every call in flight, without
   * blocking (a posted blocking collective runs to completion here). Returns whether anything happened.
   */
  synchronized boolean progress() {
    boolean moved = false;
    for (Call c = posted.poll(); c != null; c = posted.poll()) {
      moved = true;
      try {
        c.request = c.start.get();
        started.add(c);
      } catch (RuntimeException | Error e) {
        c.done.completeExceptionally(e);
      }
    }
    for (Iterator<Call> it = started.iterator(); it.hasNext(); ) {
      Call c = it.next();
      try {
        if (!c.request.test()) {
          continue;
        }
        c.done.complete(null);
      } catch (RuntimeException | Error e) {
        c.done.completeExceptionally(e);
      }
      it.remove();
      moved = true;
    }
    return moved;
  }

  /**
   * On the program's thread, when {@link #progress} did nothing: spins or sleeps once, as {@code pause}
   * says; the sleep is the binding's wait on the oldest call in flight, or a park that a newly posted call
   * ends (and the completion of {@code f}, whose waiter unparks this thread).
   */
  void idle(Backoff.Pause pause, CompletableFuture<?> f) {
    Communicator.Request oldest;
    synchronized (this) {
      oldest = started.isEmpty() ? null : started.get(0).request;
    }
    if (oldest == null) {
      oldest = new Communicator.Request() {
        @Override
        public boolean test() {
          return !posted.isEmpty() || f.isDone();
        }

        @Override
        public void await() {
          throw new UnsupportedOperationException();
        }

        @Override
        public boolean await(long nanos) {
          idler = Thread.currentThread();
          try {
            if (!test()) {
              LockSupport.parkNanos(nanos);
            }
          } finally {
            idler = null;
          }
          return test();
        }
      };
    }
    synchronized (this) {
      pause.pause(oldest); // the binding's requests are tested and waited for on this thread only
    }
  }

  /**
   * An MPI call that the library thread posted for the program's thread, seen by the library thread as a
   * request: it completes when the program's thread has started the call and seen it complete.
   */
  static final class Call implements Communicator.Request {
    final Supplier<Communicator.Request> start;
    final CompletableFuture<Void> done = new CompletableFuture<>();
    /** The binding's request; touched by the program's thread only. */
    Communicator.Request request;

    Call(Supplier<Communicator.Request> start) {
      this.start = start;
    }

    @Override
    public boolean test() {
      if (!done.isDone()) {
        return false;
      }
      await();
      return true;
    }

    @Override
    public void await() {
      try {
        done.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for the program's thread to make MPI progress", e);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof Error err) {
          throw err;
        }
        throw e.getCause() instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
      }
    }

    @Override
    public boolean await(long nanos) {
      try {
        done.get(nanos, TimeUnit.NANOSECONDS);
      } catch (TimeoutException e) {
        return false;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for the program's thread to make MPI progress", e);
      } catch (ExecutionException e) {
        // thrown by test()
      }
      return test();
    }
  }
}
