package org.mpibuild.internal.protocol;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.mpibuild.CompileException;
import org.mpibuild.KernelSource;
import org.mpibuild.internal.agreement.RankFailure;
import org.mpibuild.internal.cache.CacheKey;
import org.mpibuild.internal.cache.Caches;
import org.mpibuild.internal.cache.KernelCache;
import org.mpibuild.internal.cache.LockFile;
import org.mpibuild.internal.settings.CacheSettings;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.internal.wire.Payload;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Compilation;
import org.mpibuild.spi.LoadedProgram;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the root's binary comes from: the node-local cache, else the shared cache, else a compile with the
 * shared cache's lock held, so that concurrent jobs compile once. Never throws for a failed build: every
 * failure becomes an error envelope, so that the root still takes part in the broadcast.
 */
final class BinarySource {
  private static final Logger log = LoggerFactory.getLogger(BinarySource.class);

  /** Requests already reported as uncacheable, so that each is said once per process. */
  private static final Set<String> UNCACHEABLE_REPORTED = ConcurrentHashMap.newKeySet();
  private final Backend backend;
  private final Settings settings;
  private final Caches caches;
  /** Runs compiles, so that one that runs over its timeout can be abandoned; threads end when idle. */
  private final ExecutorService compiler = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "mpi-build-compile");
    t.setDaemon(true);
    return t;
  });

  BinarySource(Backend backend, Settings settings, Caches caches) {
    this.backend = backend;
    this.settings = settings;
    this.caches = caches;
  }

  /**
   * What the root has before the broadcast: the envelope to send and, on success, its own program; what
   * to do once the binary is on its way; how long obtaining it took.
   */
  record Obtained(Envelope envelope, LoadedProgram program, boolean compiled, boolean cacheHit,
      Runnable afterBroadcast, long nanos) {
    Obtained(Envelope envelope, LoadedProgram program, boolean compiled, boolean cacheHit) {
      this(envelope, program, compiled, cacheHit, () -> { }, 0);
    }

    Obtained then(Runnable next) {
      return new Obtained(envelope, program, compiled, cacheHit, next, nanos);
    }

    Obtained took(long n) {
      return new Obtained(envelope, program, compiled, cacheHit, afterBroadcast, n);
    }
  }

  /**
   * Gets the binary on the root: from the node-local cache, else the shared cache, else by compiling with
   * the shared cache's lock held so that concurrent jobs compile once. Never throws: any failure becomes
   * an error envelope, so that the root still takes part in the broadcast.
   */
  Obtained obtainOnRoot(KernelSource request, List<String> rankTargets, boolean load) {
    return obtainOnRoot(request, rankTargets, load, false);
  }

  /**
   * {@link #obtainOnRoot(KernelSource, List, boolean)}; with {@code alone}, no other rank needs the binary (a job
   * of one rank, loading), so a compile may give the program first and the binary later, or no binary at all
   * where nothing keeps it ({@link Backend#compileAlone}): its envelope is then pending, and the cache is filled
   * in the background once the binary is made (close waits for it).
   */
  Obtained obtainOnRoot(KernelSource request, List<String> rankTargets, boolean load, boolean alone) {
    String target = "";
    String key = "";
    try {
      target = backend.buildTarget(rankTargets == null ? List.of(backend.target()) : rankTargets);
      if (!caches.enabled()) {
        return compile(request, target, "", alone, false);
      }
      KernelCache shared = caches.shared();
      try {
        key = CacheKey.of(request, backend.id(), backend.compilerIdentity(target), target);
      } catch (CacheKey.Uncacheable e) {
        if (UNCACHEABLE_REPORTED.add(e.getMessage())) {
          log.warn("this request is built but never cached: {}", e.getMessage());
        }
        return compile(request, target, "", alone, false);
      }
      Obtained hit = fromCache(caches.node(), key, load);
      if (hit == null) {
        hit = fromCache(shared, key, load);
      }
      if (hit != null) {
        return hit;
      }
      if (shared == null) {
        return compile(request, target, key, alone, kept(null));
      }
      LockFile lock = shared.lock(key);
      try {
        hit = fromCache(shared, key, load); // another job may have written it while this one waited
        if (hit != null) {
          return hit;
        }
        Obtained built = compile(request, target, key, alone, kept(shared));
        // The entry is written, and the lock released, once the binary is on its way to the other ranks (or,
        // made later, once it is made): the fsyncs are then off the path to every rank's ready kernel.
        String entryKey = key;
        LockFile held = lock;
        lock = null;
        return built.then(() -> caches.whenComplete(built.envelope, complete -> {
          try (LockFile ignored = held) {
            if (complete != null) {
              shared.store(entryKey, complete);
            }
          }
        }, held));
      } finally {
        if (lock != null) {
          lock.close();
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return failed(Envelope.Status.INTERNAL_ERROR, request, target, key, "", "interrupted while waiting for a cache lock");
    } catch (RuntimeException | Error e) {
      log.warn("the root failed unexpectedly", e);
      return failed(Envelope.Status.INTERNAL_ERROR, request, target, key, "", RankFailure.describe(e));
    }
  }

  /** A usable entry of {@code cache}, loaded on the root; null on a miss or an entry the device refuses. */
  private Obtained fromCache(KernelCache cache, String key, boolean load) {
    if (cache == null) {
      return null;
    }
    KernelCache.Entry entry = cache.lookup(key, settings.maxBinaryBytes());
    if (entry == null) {
      return null;
    }
    Envelope e = entry.envelope();
    if (e.status() != Envelope.Status.OK) {
      log.debug("cached compile failure for {} (negative entry)", key);
      return new Obtained(e, null, false, true);
    }
    if (!load) {
      return new Obtained(e, null, false, true);
    }
    try {
      return new Obtained(e, ProgramLoader.loadChecked(backend, e), false, true);
    } catch (RuntimeException | LinkageError ex) {
      log.warn("cache entry {} cannot be loaded ({}); moving it aside and rebuilding", entry.file(), RankFailure.describe(ex));
      cache.discard(key);
      return null;
    }
  }

  /**
   * Whether a binary made here is kept: by a cache this rank writes (the shared one, or the node's as its first
   * rank), not read-only. Alone, a backend need make no binary that nothing keeps.
   */
  private boolean kept(KernelCache shared) {
    if (caches.settings().access() != CacheSettings.Access.ON) {
      return false;
    }
    return shared != null || (caches.node() != null && caches.nodeComm() != null && caches.nodeComm().rank() == 0);
  }

  /** @param needBinary whether a cache keeps the binary ({@link #kept}); alone, none is made otherwise */
  private Obtained compile(KernelSource request, String target, String key, boolean alone, boolean needBinary) {
    try {
      Compilation c = compileWithin(request, target, alone, needBinary, settings.compileTimeout());
      try {
        List<String> names = c.program() != null ? c.program().kernelNames() : request.kernelNames();
        Envelope.Metadata meta = Envelope.Metadata.built(backend.id(), target, names, request.options(), c.buildLog(),
            key, backend.compilerIdentity(target));
        if (c.binary() != null) {
          return new Obtained(Envelope.ok(meta, Payload.copyOf(c.binary())), c.program(), true, false);
        }
        if (!alone || c.program() == null) {
          throw new IllegalStateException("the backend " + backend.id() + " returned no binary for a build that needs one");
        }
        // Alone: the program is ready; its binary comes later (for the cache) or when asked for.
        return new Obtained(Envelope.pending(meta, new BinaryFill(c.binaryLater(), meta, settings.compileTimeout(),
            () -> compileWithin(request, target, false, true, settings.compileTimeout()))), c.program(), true, false);
      } catch (RuntimeException e) {
        release(c);
        throw e;
      }
    } catch (CompileException e) {
      return failed(Envelope.Status.COMPILE_FAILED, request, target, key, e.buildLog(), e.reason());
    } catch (IllegalArgumentException e) {
      return failed(Envelope.Status.INVALID_REQUEST, request, target, key, "", e.getMessage());
    } catch (TimeoutException e) {
      return failed(Envelope.Status.COMPILE_TIMED_OUT, request, target, key, "", "the compile did not finish within "
          + settings.compileTimeout().toMillis() / 1000.0 + " s (MPI_BUILD_COMPILE_TIMEOUT)");
    }
  }

  /**
   * Runs the backend's compile on a worker thread and waits at most {@code timeout}. A compile that runs
   * over is abandoned: interrupted (backends that run a compiler process kill it), and whatever it loads
   * later is released.
   */
  private Compilation compileWithin(KernelSource request, String target, boolean alone, boolean needBinary,
      Duration timeout) throws TimeoutException {
    Future<Compilation> f = compiler.submit(() -> alone ? backend.compileAlone(request, target, needBinary)
        : backend.compile(request, target));
    try {
      return f.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      CompletableFuture.runAsync(() -> {
        try {
          release(f.get());
        } catch (Exception | Error ignored) {
          // the abandoned compile failed as well
        }
      });
      log.warn("compile abandoned after {} ms", timeout.toMillis());
      throw e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      f.cancel(true);
      throw new IllegalStateException("interrupted while compiling", e);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof RuntimeException re) {
        throw re;
      }
      if (c instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(c);
    }
  }

  /** Releases a compilation nobody will use: its program, and the binary still being made for it. */
  private static void release(Compilation c) {
    if (c.binaryLater() != null) {
      c.binaryLater().cancel(true);
    }
    if (c.program() != null) {
      c.program().close();
    }
  }

  private Obtained failed(Envelope.Status status, KernelSource request, String target, String key, String buildLog,
      String msg) {
    Envelope.Metadata meta = Envelope.Metadata.failed(backend.id(), target, request.kernelNames(), request.options(),
        buildLog, msg, key);
    return new Obtained(Envelope.failure(status, meta), null, status == Envelope.Status.COMPILE_FAILED, false);
  }
}
