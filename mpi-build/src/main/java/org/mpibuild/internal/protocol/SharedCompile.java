package org.mpibuild.internal.protocol;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.mpibuild.CompileException;
import org.mpibuild.KernelSource;
import org.mpibuild.internal.agreement.RankFailure;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.internal.wire.Payload;
import org.mpibuild.internal.wire.SharePlan;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Compilation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A compile the root shares with ranks that would otherwise wait for it ({@code MPI_BUILD_COMPILE_SHARE}): the
 * backend splits it into parts ({@link Backend#compileParts}), the root compiles the first while the others
 * each compile one ({@link Backend#compilePart}), and the root joins them ({@link Backend#joinParts}) into the
 * binary it would have made alone, which then goes to every rank as any other.
 *
 * <p>Nothing is lost to a rank whose part fails or arrives corrupt: the root compiles that part itself; to parts
 * that do not join, the root compiles the whole request. A failure of the root's own part (the source does not
 * compile, the compile timed out) is the build's failure, as it would have been alone. What waits for the result
 * (the cache's entry and lock) gets it once it is on its way, or nothing if the compile is abandoned.
 */
final class SharedCompile {
  private static final Logger log = LoggerFactory.getLogger(SharedCompile.class);

  private final BinarySource source;
  private final KernelSource request;
  private final String target;
  private final String key;
  private final List<String> parts;
  private final Envelope plan;
  private final long started = System.nanoTime();
  private final Future<Compilation> rootPart;
  /** Counted down when the root's part has ended, whichever way. */
  private final CountDownLatch partEnded = new CountDownLatch(1);
  private final List<Consumer<Envelope>> next = new ArrayList<>();
  private boolean ended;

  /** Starts the root's part (the first) on the source's compile thread. */
  SharedCompile(BinarySource source, KernelSource request, String target, String key, List<String> parts) {
    Backend backend = source.backend();
    this.source = source;
    this.request = request;
    this.target = target;
    this.key = key;
    this.parts = List.copyOf(parts);
    this.plan = Envelope.share(source.metadata(request, target, key, request.kernelNames(), ""),
        Payload.copyOf(SharePlan.encode(this.parts)));
    this.rootPart = source.submit(() -> {
      try {
        return backend.compilePart(request, target, this.parts.get(0));
      } finally {
        partEnded.countDown();
      }
    });
  }

  /** The announcement every rank receives: the parts, and the target they are built for. */
  Envelope plan() {
    return plan;
  }

  /** Gives {@code n} the envelope of the result once it is on its way, or null if there is none. */
  void then(Consumer<Envelope> n) {
    next.add(n);
  }

  /**
   * The root's result, once the other ranks' parts are in: {@code others.get(k - 1)} is part k as it arrived
   * (null where it arrived corrupt), from rank {@code owners.get(k - 1)}. Never throws: a failure is the result's
   * failure envelope.
   */
  BinarySource.Obtained finish(List<Envelope> others, List<Integer> owners) {
    BinarySource.Obtained result;
    try {
      List<Compilation> compiled = new ArrayList<>(parts.size());
      compiled.add(withBinary(source.within(rootPart, left())));
      log.debug("shared compile of {}: the root's part took {} ms, the parts of ranks {} are in", request.kernelNames(),
          (System.nanoTime() - started) / 1_000_000, owners);
      for (int k = 1; k < parts.size(); k++) {
        Envelope e = others.get(k - 1);
        if (e != null && e.status() == Envelope.Status.OK) {
          compiled.add(new Compilation(null, e.payload().toByteArray(), e.metadata().buildLog()));
          continue;
        }
        String why = e == null ? "it arrived corrupt" : e.metadata().error();
        log.warn("part {} of {} of the shared compile of {} failed on rank {} ({}); the root compiles it", k + 1,
            parts.size(), request.kernelNames(), owners.get(k - 1), why);
        String part = parts.get(k);
        compiled.add(withBinary(source.compileWithin(() -> source.backend().compilePart(request, target, part),
            left())));
      }
      Compilation joined = null;
      try {
        joined = source.backend().joinParts(request, target, compiled);
      } catch (RuntimeException e) {
        log.warn("the parts of the shared compile of {} do not join ({}); the root compiles the whole request",
            request.kernelNames(), RankFailure.describe(e));
      }
      result = joined != null ? source.built(request, target, key, withBinary(joined))
          : source.compileWhole(request, target, key);
    } catch (CompileException | IllegalArgumentException | TimeoutException e) {
      result = source.failed(request, target, key, e);
    } catch (RuntimeException | Error e) {
      log.warn("the shared compile failed on the root", e);
      result = source.failed(Envelope.Status.INTERNAL_ERROR, request, target, key, "", RankFailure.describe(e));
    }
    ended = true;
    Envelope sent = result.envelope();
    List<Consumer<Envelope>> after = List.copyOf(next);
    return new BinarySource.Obtained(sent, result.program(), result.compiled(), false,
        () -> after.forEach(n -> n.accept(sent)), 0, null);
  }

  private Compilation withBinary(Compilation c) {
    if (c.binary() == null) {
      BinarySource.release(c);
      throw new IllegalStateException("the backend " + source.backend().id() + " returned no binary for a part");
    }
    return c;
  }

  /**
   * Ends a shared compile that will never finish: the root's part is stopped (a compile process is killed) and
   * waited for, so that nothing uses the backend after the call; what waited for a result gets none.
   */
  void abandon() {
    if (ended) {
      return;
    }
    ended = true;
    rootPart.cancel(true);
    try {
      if (!partEnded.await(10, TimeUnit.SECONDS)) {
        log.warn("the root's part of an abandoned shared compile of {} is still running", request.kernelNames());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    next.forEach(n -> n.accept(null));
  }

  /** What is left of the compile timeout, which the whole shared compile shares. */
  private Duration left() {
    return Duration.ofNanos(Math.max(1, source.compileTimeout().toNanos() - (System.nanoTime() - started)));
  }
}
