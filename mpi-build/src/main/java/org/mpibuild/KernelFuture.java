package org.mpibuild;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.mpibuild.internal.protocol.AsyncBuilds;

/**
 * A kernel being built by {@link MpiBuild#mpiBuildKernelAsync}: a request in MPI's sense, completed with
 * {@link #join()} and tested with {@link #test()}. Testing or joining makes progress on the library's MPI
 * calls when they run on the caller's thread (MPI below {@code MPI_THREAD_MULTIPLE}); see
 * {@link MpiBuild#progress()}.
 *
 * <p>It is not a {@link Future}: a build cannot be cancelled once started, because it
 * is a collective and the other ranks are taking part, and waiting for it is not interruptible.
 */
public final class KernelFuture {
  private final CompletableFuture<Kernel> future;
  private final AsyncBuilds builds;

  KernelFuture(CompletableFuture<Kernel> future, AsyncBuilds builds) {
    this.future = future;
    this.builds = builds;
  }

  /**
   * Makes progress (when MPI calls stay on the caller's thread) and returns whether the build has
   * completed, successfully or not. Never blocks, like {@code MPI_Test}.
   *
   * @return whether {@link #join()} would return or throw at once
   */
  public boolean test() {
    builds.progress();
    return future.isDone();
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
      return join(Long.MAX_VALUE / 2, TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Returns the kernel, waiting at most {@code timeout} for it, and throws what a blocking build would
   * have thrown.
   *
   * @param timeout how long to wait
   * @param unit the unit of {@code timeout}
   * @return this rank's kernel
   * @throws TimeoutException if the build has not completed in time (it goes on; join again later)
   * @throws KernelBuildException on every rank, as {@link MpiBuild#mpiBuildKernel(KernelSource, int)}
   */
  public Kernel join(long timeout, TimeUnit unit) throws TimeoutException {
    builds.await(future, unit.toNanos(timeout));
    try {
      return future.join();
    } catch (CompletionException e) {
      throw e.getCause() instanceof RuntimeException re ? re : e;
    }
  }
}
