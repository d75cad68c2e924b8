package org.mpibuild;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.mpibuild.internal.AsyncBuilds;

/**
 * A kernel being built by {@link MpiBuild#mpiBuildKernelAsync}. Touching it ({@link #isDone()},
 * {@link #get()}, {@link #join()}) makes progress on the library's MPI calls when they run on the caller's
 * thread (MPI below {@code MPI_THREAD_MULTIPLE}); see {@link MpiBuild#progress()}.
 *
 * <p>A build cannot be cancelled once started: it is a collective, and the other ranks are taking part.
 */
public final class KernelFuture implements Future<Kernel> {
  private final CompletableFuture<Kernel> future;
  private final AsyncBuilds builds;

  KernelFuture(CompletableFuture<Kernel> future, AsyncBuilds builds) {
    this.future = future;
    this.builds = builds;
  }

  /**
   * Returns the kernel, waiting for it, and throws what a blocking build would have thrown.
   *
   * @return this rank's kernel
   * @throws KernelBuildException on every rank, as {@link MpiBuild#mpiBuildKernel(KernelSource, int)}
   * @throws IllegalArgumentException on every rank, for an invalid request
   */
  public Kernel join() {
    try {
      builds.await(future, Long.MAX_VALUE / 2);
      return future.join();
    } catch (TimeoutException e) {
      throw new IllegalStateException(e);
    } catch (java.util.concurrent.CompletionException e) {
      throw e.getCause() instanceof RuntimeException re ? re : e;
    }
  }

  /**
   * Always false: a collective build cannot be cancelled.
   *
   * @param mayInterruptIfRunning ignored
   * @return false
   */
  @Override
  public boolean cancel(boolean mayInterruptIfRunning) {
    return false;
  }

  @Override
  public boolean isCancelled() {
    return false;
  }

  /** Makes progress (caller mode) and returns whether the build has completed. Never blocks. */
  @Override
  public boolean isDone() {
    builds.progress();
    return future.isDone();
  }

  /**
   * Waits for the kernel.
   *
   * @throws ExecutionException wrapping the {@link KernelBuildException} every rank gets
   */
  @Override
  public Kernel get() throws InterruptedException, ExecutionException {
    try {
      return get(Long.MAX_VALUE / 2, TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public Kernel get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
    builds.await(future, unit.toNanos(timeout));
    if (Thread.interrupted()) {
      throw new InterruptedException();
    }
    try {
      return future.get();
    } catch (CancellationException e) {
      throw new IllegalStateException(e);
    }
  }
}
