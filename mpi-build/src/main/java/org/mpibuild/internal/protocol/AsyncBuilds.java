package org.mpibuild.internal.protocol;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.Function;
import org.mpibuild.internal.comm.Backoff;
import org.mpibuild.internal.comm.DeadlineAllReduce;
import org.mpibuild.internal.comm.LogContext;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.spi.Communicator;

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
  /** The MPI calls posted for the program's thread (caller mode). */
  private final CallerQueue calls;
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
    this.calls = new CallerQueue();
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
      calls.progress();
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
      calls.progress();
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
      f.whenComplete((v, e) -> LockSupport.unpark(self)); // ends a sleep in CallerQueue.idle at once
    }
    while (!f.isDone()) {
      if (System.nanoTime() - deadline > 0) {
        throw new TimeoutException("the build did not complete in time");
      }
      if (mode == Mode.CALLER) {
        if (!calls.progress()) {
          calls.idle(pause, f);
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
