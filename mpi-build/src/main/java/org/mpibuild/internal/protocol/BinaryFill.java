package org.mpibuild.internal.protocol;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RunnableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.mpibuild.internal.agreement.RankFailure;
import org.mpibuild.internal.wire.Completion;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.internal.wire.Payload;
import org.mpibuild.spi.Compilation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How the binary of a program that was ready before it ({@code Backend.compileAlone}) comes, for its pending
 * envelope ({@link Envelope#pending}): made in the background from the moment the program is ready, if the
 * backend started that (for the cache), or made when first wanted ({@code Compilation.whenWanted}: run by
 * {@link #complete} or by the program's close); else, or if that failed, made by a compile the first time someone
 * asks for it ({@link #complete}: {@code Kernel.binaryData()}), and kept.
 */
final class BinaryFill implements Completion {
  private static final Logger log = LoggerFactory.getLogger(BinaryFill.class);
  private final Future<byte[]> background;
  private final boolean whenWanted;
  private final Envelope.Metadata meta;
  private final Duration timeout;
  private final Callable<Compilation> compile;
  private Envelope made;
  private boolean waited;

  /**
   * @param background the binary the backend is making, or null if it makes none
   * @param timeout how long the background binary may take (the compile timeout): past it, its making is
   *     cancelled with interruption (a backend kills its compile process)
   * @param whenWanted whether {@code background} is a task nobody runs until the binary is wanted: its wait has no
   *     timeout until then (the program's close runs it at the latest); it only packs what the program holds, and
   *     where it fails, {@code compile} makes the binary
   * @param compile a full compile that makes the binary, for {@link #complete} when there is none
   */
  BinaryFill(Future<byte[]> background, boolean whenWanted, Envelope.Metadata meta, Duration timeout,
      Callable<Compilation> compile) {
    this.background = background;
    this.whenWanted = whenWanted && background instanceof RunnableFuture<?>;
    this.meta = meta;
    this.timeout = timeout;
    this.compile = compile;
  }

  @Override
  public synchronized Envelope awaitMade() {
    if (waited || background == null) {
      return made;
    }
    waited = true;
    try {
      made = Envelope.ok(meta, Payload.copyOf(whenWanted ? background.get()
          : background.get(timeout.toNanos(), TimeUnit.NANOSECONDS)));
    } catch (TimeoutException e) {
      background.cancel(true);
      log.warn("the binary of {} was not made within {} s (MPI_BUILD_COMPILE_TIMEOUT): it is not cached",
          meta.kernelNames(), timeout.toMillis() / 1000.0);
    } catch (ExecutionException e) {
      if (whenWanted) { // it only packs what is there: where that was not enough, a compile, here, bounded
        log.debug("the binary of {} was not in its program ({}); a compile makes it", meta.kernelNames(),
            RankFailure.describe(e.getCause()));
        made = compiled();
      } else {
        log.warn("the binary of {} could not be made, and is not cached: {}", meta.kernelNames(),
            RankFailure.describe(e.getCause()));
      }
    } catch (InterruptedException e) {
      if (!whenWanted) { // a task made when wanted may be reading its program: it ends on its own
        background.cancel(true);
      }
      Thread.currentThread().interrupt();
      log.warn("interrupted while the binary of {} was made: it is not cached", meta.kernelNames());
    } catch (RuntimeException e) { // a cancellation included
      log.warn("the binary of {} could not be made, and is not cached: {}", meta.kernelNames(), RankFailure.describe(e));
    }
    return made;
  }

  /** The binary made by the full compile (within the compile timeout); null, after a warning, if it fails. */
  private Envelope compiled() {
    try {
      return Envelope.ok(meta, Payload.copyOf(compileNow()));
    } catch (Exception e) {
      log.warn("the binary of {} could not be made, and is not cached: {}", meta.kernelNames(), RankFailure.describe(e));
      return null;
    }
  }

  private byte[] compileNow() throws Exception {
    Compilation c = compile.call();
    if (c.program() != null) {
      c.program().close();
    }
    return c.binary();
  }

  @Override
  public boolean madeWhenWanted() {
    return whenWanted;
  }

  @Override
  public Envelope complete() {
    if (whenWanted) {
      ((RunnableFuture<?>) background).run(); // wanted now: here, unless it ran or runs already
    }
    return completeNow();
  }

  private synchronized Envelope completeNow() {
    if (awaitMade() != null) {
      return made;
    }
    try {
      made = Envelope.ok(meta, Payload.copyOf(compileNow()));
      return made;
    } catch (Exception e) {
      throw new IllegalStateException("the binary could not be made: " + RankFailure.describe(e), e);
    }
  }
}
