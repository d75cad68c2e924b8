package org.mpibuild.internal.protocol;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.mpibuild.internal.agreement.RankFailure;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.internal.wire.Payload;
import org.mpibuild.spi.Compilation;

/**
 * The binary of a program that was ready before it ({@code Backend.compileAlone}), as the complete envelope a
 * pending one stands for ({@link Envelope#pending}): made in the background from the moment the program is
 * ready ({@link #start}), or made the first time someone asks for it ({@link #onDemand}). Either supplier gives
 * the complete envelope or throws {@link IllegalStateException} saying why there is none.
 */
final class BinaryFill {
  private BinaryFill() {}

  /**
   * Waits, on a thread of its own, at most {@code timeout} for {@code binary}; past it, cancels the binary's
   * making with interruption (a backend kills its compile process).
   */
  static Supplier<Envelope> start(Future<byte[]> binary, Envelope.Metadata meta, Duration timeout) {
    CompletableFuture<Envelope> done = new CompletableFuture<>();
    Thread t = new Thread(() -> {
      try {
        done.complete(Envelope.ok(meta, Payload.copyOf(binary.get(timeout.toNanos(), TimeUnit.NANOSECONDS))));
      } catch (TimeoutException e) {
        binary.cancel(true);
        done.completeExceptionally(new IllegalStateException("the binary was not made within "
            + timeout.toMillis() / 1000.0 + " s (MPI_BUILD_COMPILE_TIMEOUT)"));
      } catch (ExecutionException e) {
        done.completeExceptionally(new IllegalStateException("the binary could not be made: "
            + RankFailure.describe(e.getCause()), e.getCause()));
      } catch (InterruptedException | java.util.concurrent.CancellationException e) {
        binary.cancel(true);
        done.completeExceptionally(new IllegalStateException("the binary's making was interrupted", e));
      } catch (RuntimeException | Error e) {
        done.completeExceptionally(new IllegalStateException("the binary could not be made: "
            + RankFailure.describe(e), e));
      }
    }, "mpi-build-binary");
    t.setDaemon(true);
    t.start();
    return () -> {
      try {
        return done.join();
      } catch (CompletionException e) {
        throw (IllegalStateException) e.getCause();
      }
    };
  }

  /**
   * Makes the binary with {@code compile} (a full compile, whose program is released) the first time the
   * supplier is called, and keeps it.
   */
  static Supplier<Envelope> onDemand(Callable<Compilation> compile, Envelope.Metadata meta) {
    return new Supplier<>() {
      private Envelope made;

      @Override
      public synchronized Envelope get() {
        if (made == null) {
          try {
            Compilation c = compile.call();
            if (c.program() != null) {
              c.program().close();
            }
            made = Envelope.ok(meta, Payload.copyOf(c.binary()));
          } catch (Exception e) {
            throw new IllegalStateException("the binary could not be made: " + RankFailure.describe(e), e);
          }
        }
        return made;
      }
    };
  }
}
