package org.mpibuild.internal.protocol;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.mpibuild.internal.comm.Backoff;
import org.mpibuild.internal.comm.DeadlineAllReduce;
import org.mpibuild.internal.comm.LogContext;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.ForwardingCommunicator;

/**
 * The asynchronous builds of one instance. Each build runs the ordinary protocol on one library thread,
 * in the order the builds were started (the same order on every rank, as for any collective), so the
 * program's thread goes on at once. The protocol's MPI calls are non-blocking collectives
 * ({@code MPI_Ibcast}, {@code MPI_Iallreduce}) on the library's own duplicate communicator, and who makes
 * them depends on the thread level that MPI provides:
 *
 * <ul>
 *   <li><b>thread</b> (MPI_THREAD_MULTIPLE, or no MPI): the library thread starts them and waits for them;
 *       builds complete with no help from the program.
 *   <li><b>caller</b> (SINGLE, FUNNELED, SERIALIZED): the library thread only posts them; the program's
 *       thread starts and tests them when it touches a future ({@code isDone}, {@code get}) or calls
 *       {@code progress()}. Every MPI call of a build is posted so: the collectives, the arrival messages
 *       ({@link DeadlineAllReduce}) and an abort at the deadline. The library thread sees each as a request that
 *       completes when the program's thread has completed it, so {@code MPI_BUILD_COLLECTIVE_TIMEOUT} holds
 *       as for a blocking build: past it, while the program waits for a future, the job is aborted, naming
 *       the ranks that never started the build. Compiles, cache reads and loading run on library threads:
 *       once the ranks have agreed (one all-reduce, completed by the first progress calls), the root's
 *       compile overlaps the program's work even between progress calls.
 * </ul>
 */
public final class AsyncBuilds implements AutoCloseable {
  /** Who makes the MPI calls. */
  public enum Mode {
    THREAD,
    CALLER
  }

  private final Mode mode;
  private final Posted posted;
  private final CollectiveBuild protocol;
  private final Backoff waiting;
  private final ExecutorService thread;
  private final ArrayDeque<CompletableFuture<?>> inFlight = new ArrayDeque<>();

  /**
   * @param protocol the instance's protocol; its communicators are wrapped
   * @param comm the instance's communicator
   * @param setting what the configuration asks for
   */
  public AsyncBuilds(CollectiveBuild protocol, Communicator comm, Settings.Progress setting) {
    this.mode = chooseMode(comm.threadLevel(), setting);
    this.waiting = protocol.waiting();
    Queue calls = new Queue();
    this.posted = new Posted(comm, mode, calls);
    this.protocol = protocol.over(c -> c == comm ? posted : new Posted(c, mode, calls));
    int rank = comm.rank();
    this.thread = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "mpi-build-async rank " + rank);
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * The mode for a thread level: a library thread may call MPI only under MPI_THREAD_MULTIPLE.
   *
   * @throws IllegalStateException if a library thread is asked for and MPI does not allow it
   */
  static Mode chooseMode(Communicator.ThreadLevel level, Settings.Progress setting) {
    boolean multiple = level == Communicator.ThreadLevel.MULTIPLE;
    switch (setting) {
      case CALLER:
        return Mode.CALLER;
      case THREAD:
        if (!multiple) {
          throw new IllegalStateException("MPI_BUILD_PROGRESS=thread needs MPI_THREAD_MULTIPLE, but MPI provides "
              + "MPI_THREAD_" + level + "; initialize MPI with MPI.InitThread(args, MPI.THREAD_MULTIPLE), or use "
              + "MPI_BUILD_PROGRESS=caller (the default under " + level + ") and call progress() or get()");
        }
        return Mode.THREAD;
      default:
        return multiple ? Mode.THREAD : Mode.CALLER;
    }
  }

  /** @return who makes the MPI calls */
  public Mode mode() {
    return mode;
  }

  /** Starts {@code build} on the library thread; the future completes with its result. */
  public synchronized <T> CompletableFuture<T> submit(Function<CollectiveBuild, T> build, int rank) {
    if (mode == Mode.CALLER) {
      // A rank that started a build has entered it, whatever it computes before its next call into the
      // library: its arrival messages start here, on the program's thread, after what earlier builds posted.
      posted.calls.progress();
      posted.announceAhead();
    }
    CompletableFuture<T> f = new CompletableFuture<>();
    thread.execute(() -> {
      try (LogContext ignored = LogContext.rank(rank)) {
        f.complete(build.apply(protocol));
      } catch (Throwable e) {
        f.completeExceptionally(e);
      }
    });
    inFlight.add(f);
    progress();
    return f;
  }

  /**
   * Makes progress without blocking: in caller mode, starts the MPI calls the library thread has posted
   * and tests those in flight. Does nothing in thread mode.
   */
  public void progress() {
    if (mode == Mode.CALLER) {
      posted.calls.progress();
    }
  }

  /**
   * Blocks until {@code f} completes, making progress in caller mode; waits as {@link Backoff} does (a short
   * spin, then sleeps that end early when an MPI call completes or the library thread posts one).
   */
  public <T> void await(CompletableFuture<T> f, long timeoutNanos) throws TimeoutException {
    long deadline = System.nanoTime() + timeoutNanos;
    Backoff.Pause pause = waiting.start();
    if (mode == Mode.CALLER) {
      Thread self = Thread.currentThread();
      f.whenComplete((v, e) -> LockSupport.unpark(self)); // ends a sleep in Queue.idle at once
    }
    while (!f.isDone()) {
      if (System.nanoTime() - deadline > 0) {
        throw new TimeoutException("the build did not complete in time");
      }
      if (mode == Mode.CALLER) {
        if (!posted.calls.progress()) {
          posted.calls.idle(pause, f);
        }
      } else {
        try {
          f.get(Math.min(timeoutNanos, TimeUnit.MILLISECONDS.toNanos(100)), TimeUnit.NANOSECONDS);
        } catch (Exception e) {
          // completion is read below by the caller
        }
      }
    }
  }

  /** Waits for every build started so far, successful or not. Used before a blocking collective call. */
  public void drain() {
    List<CompletableFuture<?>> all;
    synchronized (this) {
      all = new ArrayList<>(inFlight);
      inFlight.clear();
    }
    for (CompletableFuture<?> f : all) {
      try {
        await(f, Long.MAX_VALUE / 2);
      } catch (TimeoutException e) {
        throw new IllegalStateException(e);
      }
    }
  }

  @Override
  public void close() {
    drain();
    thread.shutdown();
  }

  /**
   * An MPI call that the library thread posted for the program's thread, seen by the library thread as a
   * request: it completes when the program's thread has started the call and seen it complete.
   */
  private static final class Call implements Communicator.Request {
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

  /**
   * The calls posted by the library thread, in the order posted, and those the program's thread has
   * started and not yet seen complete. Shared by the wrappers of one instance's communicators.
   */
  private static final class Queue {
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
  }

  /**
   * A communicator the library thread uses: in thread mode, it passes every call on; in caller mode, every
   * MPI call (collective, message or abort) is posted to the {@link Queue} for the program's thread, and a
   * blocking one waits until the program's thread has completed it.
   */
  private static final class Posted extends ForwardingCommunicator implements DeadlineAllReduce.Announcing {
    private final Mode mode;
    private final Queue calls;
    /** Arrivals announced on the program's thread for builds not yet at their first collective, in order. */
    private final ConcurrentLinkedQueue<DeadlineAllReduce.Arrivals> ahead = new ConcurrentLinkedQueue<>();
    /** Whether this wrapper made its communicator (a split), so that closing it frees that communicator. */
    private final boolean owns;

    Posted(Communicator inner, Mode mode, Queue calls) {
      this(inner, mode, calls, false);
    }

    private Posted(Communicator inner, Mode mode, Queue calls, boolean owns) {
      super(inner);
      this.mode = mode;
      this.calls = calls;
      this.owns = owns;
    }

    /**
     * On the program's thread, in caller mode: starts this rank's arrival messages for the next build now
     * ({@link DeadlineAllReduce#announce}); that build's first collective takes them ({@link #takeArrivals}).
     */
    void announceAhead() {
      if (inner.size() > 1) {
        ahead.add(DeadlineAllReduce.announce(new ForwardingCommunicator(inner) {
          @Override
          public Request iSend(ByteBuffer buffer, int dest, int tag) {
            return calls.startHere(() -> inner.iSend(buffer, dest, tag));
          }

          @Override
          public Request iReceive(ByteBuffer buffer, int source, int tag) {
            return calls.startHere(() -> inner.iReceive(buffer, source, tag));
          }
        }));
      }
    }

    @Override
    public DeadlineAllReduce.Arrivals takeArrivals() {
      return ahead.poll();
    }

    /** Starts the call here (thread mode) or posts it for the program's thread (caller mode). */
    private Request start(Supplier<Request> start) {
      return mode == Mode.THREAD ? start.get() : calls.post(start);
    }

    /** A blocking call, made where {@link #start} makes calls; the library thread sleeps until it is done. */
    private <T> T blocking(Supplier<T> call) {
      List<T> out = new ArrayList<>(1);
      start(() -> {
        out.add(call.get());
        return Request.COMPLETED;
      }).await();
      return out.get(0);
    }

    @Override
    public void broadcast(ByteBuffer buffer, int root) {
      start(() -> inner.iBroadcast(buffer, root)).await();
    }

    @Override
    public Request iBroadcast(ByteBuffer buffer, int root) {
      return start(() -> inner.iBroadcast(buffer, root));
    }

    @Override
    public Request iAllReduceMax(int[] values, int[] result) {
      return start(() -> inner.iAllReduceMax(values, result));
    }

    @Override
    public int[] allReduceMax(int[] values) {
      int[] out = new int[values.length];
      start(() -> inner.iAllReduceMax(values, out)).await();
      return out;
    }

    @Override
    public Request iSend(ByteBuffer buffer, int dest, int tag) {
      return start(() -> inner.iSend(buffer, dest, tag));
    }

    @Override
    public Request iReceive(ByteBuffer buffer, int source, int tag) {
      return start(() -> inner.iReceive(buffer, source, tag));
    }

    @Override
    public byte[][] allGather(byte[] mine) {
      return blocking(() -> inner.allGather(mine));
    }

    @Override
    public Communicator split(int color) {
      return new Posted(blocking(() -> inner.split(color)), mode, calls, true);
    }

    @Override
    public Communicator splitByNode() {
      return new Posted(blocking(inner::splitByNode), mode, calls, true);
    }

    @Override
    public void abort(String message, int errorCode) {
      blocking(() -> {
        inner.abort(message, errorCode);
        return null;
      });
    }

    @Override
    public void close() {
      if (owns) {
        blocking(() -> {
          inner.close();
          return null;
        });
      } // else the instance closes its own communicators
    }
  }

  /** The asynchronous builds of one instance, started on first use. */
  public static final class Lazy {
    private final CollectiveBuild protocol;
    private final Communicator comm;
    private final Settings.Progress setting;
    private AsyncBuilds builds;

    public Lazy(CollectiveBuild protocol, Communicator comm, Settings.Progress setting) {
      this.protocol = protocol;
      this.comm = comm;
      this.setting = setting;
    }

    /** The builds, started now if they were not. */
    public synchronized AsyncBuilds get() {
      if (builds == null) {
        builds = new AsyncBuilds(protocol, comm, setting);
      }
      return builds;
    }

    /** Applies {@code action} to the builds if they were started; does nothing otherwise. */
    public void ifStarted(Consumer<AsyncBuilds> action) {
      AsyncBuilds b;
      synchronized (this) {
        b = builds;
      }
      if (b != null) {
        action.accept(b);
      }
    }
  }
}
