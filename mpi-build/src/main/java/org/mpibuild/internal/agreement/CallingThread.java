package org.mpibuild.internal.agreement;

import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Which program thread an instance serves: one at a time. A thread that calls while another is inside a call
 * is refused at once, and never waits; the refusal is recorded, and the call in progress carries its thread's
 * name, so that ranks which admitted different threads first (one instance called from two threads at once)
 * are told so when their calls then differ ({@link RequestAgreement}). The library's own threads never
 * enter; one running a build for a program thread marks itself with that thread ({@link #runFor}).
 */
public final class CallingThread {
  private static final ThreadLocal<Mark> CURRENT = new ThreadLocal<>();
  private final AtomicReference<Holder> holder = new AtomicReference<>();
  /** The threads refused during the current call. */
  private final Queue<String> refused = new ConcurrentLinkedQueue<>();

  /** A thread inside a call, and the call. */
  private record Holder(Thread thread, String call) {}

  /** What a thread running a call knows of it: the program thread, and the threads refused meanwhile. */
  private record Mark(String name, Queue<String> refused) {}

  /** The end of a call; nested calls of the same thread end nothing. */
  public interface Scope extends AutoCloseable {
    @Override
    void close();
  }

  /**
   * Marks this thread as inside {@code call} of the instance, or throws at once if another thread is inside
   * one. Never waits.
   *
   * @param what the instance's class, for the message: "MpiBuild"
   */
  public Scope enter(String what, String call) {
    Thread me = Thread.currentThread();
    while (true) {
      Holder h = holder.get();
      if (h == null) {
        Holder mine = new Holder(me, call);
        if (holder.compareAndSet(null, mine)) {
          refused.clear();
          CURRENT.set(new Mark(me.getName(), refused));
          return () -> {
            CURRENT.remove();
            holder.compareAndSet(mine, null);
          };
        }
      } else if (h.thread() == me) {
        return () -> { };
      } else {
        refused.add(me.getName());
        throw new IllegalStateException(what + "." + call + " on thread '" + me.getName() + "' refused: thread '"
            + h.thread().getName() + "' is inside " + what + "." + h.call() + " of this instance, which is used by "
            + "one thread at a time (give each thread an " + what + " of its own, with a communicator of its own)");
      }
      // the holder left between the two reads: read again (no wait; it moved on)
    }
  }

  /** Marks the current (library) thread as running a build for the program thread {@code name}. */
  public static Scope runFor(String name) {
    CURRENT.set(new Mark(name, new ConcurrentLinkedQueue<>()));
    return CURRENT::remove;
  }

  /** The calling program thread's name, or "" outside a call. */
  static String name() {
    Mark m = CURRENT.get();
    return m == null ? "" : m.name();
  }

  /** The threads refused so far during the call, or none outside a call. */
  static List<String> refused() {
    Mark m = CURRENT.get();
    return m == null ? List.of() : new ArrayList<>(m.refused());
  }
}
