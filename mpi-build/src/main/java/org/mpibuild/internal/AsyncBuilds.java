package org.mpibuild.internal;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.mpibuild.spi.ForwardingCommunicator;
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
 *       {@code progress()}. Compiles, cache reads and loading run on library threads: once the ranks have
 *       agreed (one all-reduce, completed by the first progress calls), the root's compile overlaps the
 *       program's work even between progress calls.
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
  private final ExecutorService thread;
  private final ArrayDeque<CompletableFuture<?>> inFlight = new ArrayDeque<>();

  /**
   * @param protocol the instance's protocol; its communicator is wrapped
   * @param comm the instance's communicator
   * @param setting what the configuration asks for
   */
  public AsyncBuilds(CollectiveBuild protocol, Communicator comm, Settings.Progress setting) {
    this.mode = chooseMode(comm.threadLevel(), setting);
    this.posted = new Posted(comm, mode);
    this.protocol = protocol.over(posted);
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
  public synchronized <T> CompletableFuture<T> submit(java.util.function.Function<CollectiveBuild, T> build, int rank) {
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
   * Makes progress without blocking: in caller mode, starts the MPI call the library thread has posted
   * and tests the one in flight. Does nothing in thread mode.
   */
  public void progress() {
    if (mode == Mode.CALLER) {
      posted.progress(false);
    }
  }

  /** Blocks until {@code f} completes, making progress in caller mode. */
  public <T> void await(CompletableFuture<T> f, long timeoutNanos) throws java.util.concurrent.TimeoutException {
    long deadline = System.nanoTime() + timeoutNanos;
    while (!f.isDone()) {
      if (System.nanoTime() - deadline > 0) {
        throw new java.util.concurrent.TimeoutException("the build did not complete in time");
      }
      if (mode == Mode.CALLER) {
        if (!posted.progress(true)) {
          LockSupport.parkNanos(20_000);
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
      } catch (java.util.concurrent.TimeoutException e) {
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
   * The communicator the library thread uses: every collective goes through {@link #call}, which in thread
   * mode starts it and waits on the library thread, and in caller mode posts it for the caller's thread and
   * waits until the caller has completed it.
   */
  private static final class Posted extends ForwardingCommunicator {
    private final Mode mode;
    private final java.util.concurrent.ConcurrentLinkedQueue<Call> queue = new java.util.concurrent.ConcurrentLinkedQueue<>();
    private Call current;

    Posted(Communicator inner, Mode mode) {
      super(inner);
      this.mode = mode;
    }

    /** A collective posted by the library thread. */
    private static final class Call {
      final Supplier<Request> start;
      final CompletableFuture<Void> done = new CompletableFuture<>();
      Request request;

      Call(Supplier<Request> start) {
        this.start = start;
      }
    }

    private void call(Supplier<Request> start) {
      if (mode == Mode.THREAD) {
        start.get().await();
        return;
      }
      Call c = new Call(start);
      queue.add(c);
      try {
        c.done.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for the program's thread to make MPI progress", e);
      } catch (java.util.concurrent.ExecutionException e) {
        throw e.getCause() instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
      }
    }

    /**
     * On the caller's thread: starts the posted call if none is in flight, and tests (or, with
     * {@code block}, waits for) the one in flight. Returns whether anything happened.
     */
    synchronized boolean progress(boolean block) {
      boolean moved = false;
      while (true) {
        if (current == null) {
          current = queue.poll();
          if (current == null) {
            return moved;
          }
          try {
            current.request = current.start.get();
          } catch (RuntimeException | Error e) {
            current.done.completeExceptionally(e);
            current = null;
            moved = true;
            continue;
          }
        }
        try {
          if (block) {
            current.request.await();
          } else if (!current.request.test()) {
            return moved;
          }
          current.done.complete(null);
        } catch (RuntimeException | Error e) {
          current.done.completeExceptionally(e);
        }
        current = null;
        moved = true;
        if (block) {
          return true;
        }
      }
    }

    @Override
    public void broadcast(ByteBuffer buffer, int root) {
      call(() -> inner.iBroadcast(buffer, root));
    }

    @Override
    public Request iBroadcast(ByteBuffer buffer, int root) {
      if (mode == Mode.THREAD) {
        return inner.iBroadcast(buffer, root);
      }
      broadcast(buffer, root);
      return Request.COMPLETED;
    }

    @Override
    public Request iAllReduceMax(int[] values, int[] result) {
      if (mode == Mode.THREAD) {
        return inner.iAllReduceMax(values, result);
      }
      System.arraycopy(allReduceMax(values), 0, result, 0, result.length);
      return Request.COMPLETED;
    }

    @Override
    public int[] allReduceMax(int[] values) {
      int[] out = new int[values.length];
      call(() -> inner.iAllReduceMax(values, out));
      return out;
    }

    /** A blocking collective, made where {@link #call} makes its calls. */
    private <T> T blocking(Supplier<T> collective) {
      List<T> out = new ArrayList<>(1);
      call(() -> {
        out.add(collective.get());
        return Request.COMPLETED;
      });
      return out.get(0);
    }

    @Override
    public byte[][] allGather(byte[] mine) {
      return blocking(() -> inner.allGather(mine));
    }

    @Override
    public Communicator split(int color) {
      return blocking(() -> inner.split(color));
    }

    @Override
    public Communicator splitByNode() {
      return blocking(inner::splitByNode);
    }

    @Override
    public void close() {
      // the instance closes its own communicator
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
    public void ifStarted(java.util.function.Consumer<AsyncBuilds> action) {
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
