package org.mpibuild.internal.protocol;

import java.time.Duration;
import java.util.ArrayList;
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
import java.util.function.Consumer;
import org.mpibuild.CompileException;
import org.mpibuild.KernelSource;
import org.mpibuild.internal.agreement.RankFailure;
import org.mpibuild.internal.cache.CacheKey;
import org.mpibuild.internal.cache.CacheStores;
import org.mpibuild.internal.cache.Caches;
import org.mpibuild.internal.cache.KernelCache;
import org.mpibuild.internal.cache.LockFile;
import org.mpibuild.internal.comm.LogContext;
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
   * to do once the binary is on its way; how long obtaining it took. A compile the root shares
   * ({@link SharedCompile}) has its plan as the envelope and no program: {@link SharedCompile#finish} gives the
   * result once the parts are in.
   */
  record Obtained(Envelope envelope, LoadedProgram program, boolean compiled, boolean cacheHit,
      Runnable afterBroadcast, long nanos, SharedCompile sharing) {
    Obtained(Envelope envelope, LoadedProgram program, boolean compiled, boolean cacheHit) {
      this(envelope, program, compiled, cacheHit, () -> { }, 0, null);
    }

    /** The announcement of a shared compile: until it is finished, what follows the broadcast abandons it. */
    static Obtained announcing(SharedCompile sharing) {
      return new Obtained(sharing.plan(), null, false, false, sharing::abandon, 0, sharing);
    }

    /**
     * This, with {@code next} given the envelope once it is on its way to the other ranks; for a shared compile,
     * the envelope of its result once that is (or null, if it never is).
     */
    Obtained then(Consumer<Envelope> next) {
      if (sharing != null) {
        sharing.then(next);
        return this;
      }
      Runnable before = afterBroadcast;
      return new Obtained(envelope, program, compiled, cacheHit, () -> {
        before.run();
        next.accept(envelope);
      }, nanos, null);
    }

    Obtained took(long n) {
      return new Obtained(envelope, program, compiled, cacheHit, afterBroadcast, n, sharing);
    }
  }

  /**
   * Gets the binary on the root: from the node-local cache, else the shared cache, else by compiling with
   * the shared cache's lock held so that concurrent jobs compile once. Never throws: any failure becomes
   * an error envelope, so that the root still takes part in the broadcast.
   */
  Obtained obtainOnRoot(KernelSource request, List<String> rankTargets, boolean load) {
    return obtainOnRoot(request, rankTargets, load, false, 1);
  }

  /**
   * {@link #obtainOnRoot(KernelSource, List, boolean)}; with {@code alone}, no other rank needs the binary (a job
   * of one rank, loading), so a compile may give the program first and the binary later, or no binary at all
   * where nothing keeps it ({@link Backend#compileAlone}): its envelope is then pending, and the cache is filled
   * in the background once the binary is made (close waits for it). With {@code ranks} above 1, that many
   * ranks (this one included) may share its compile ({@link SharedCompile}).
   */
  Obtained obtainOnRoot(KernelSource request, List<String> rankTargets, boolean load, boolean alone, int ranks) {
    String target = "";
    String key = "";
    try {
      target = backend.buildTarget(rankTargets == null ? List.of(backend.target()) : rankTargets);
      if (!caches.enabled()) {
        return compileOrShare(request, target, "", alone, false, ranks);
      }
      KernelCache shared = caches.shared();
      try {
        key = CacheKey.of(request, backend.id(), backend.compilerIdentity(target), target);
      } catch (CacheKey.Uncacheable e) {
        if (UNCACHEABLE_REPORTED.add(e.getMessage())) {
          log.warn("this request is built but never cached: {}", e.getMessage());
        }
        return compileOrShare(request, target, "", alone, false, ranks);
      }
      CacheStores.await(key); // this process reads what it wrote
      Obtained hit = fromCache(caches.node(), key, load);
      if (hit == null) {
        hit = fromCache(shared, key, load);
      }
      if (hit != null) {
        return hit;
      }
      prepareToStore(shared);
      if (shared == null) {
        return compileOrShare(request, target, key, alone, kept(null), ranks);
      }
      LockFile lock = shared.lock(key);
      try {
        hit = fromCache(shared, key, load); // another job may have written it while this one waited
        if (hit != null) {
          return hit;
        }
        Obtained built = compileOrShare(request, target, key, alone, kept(shared), ranks);
        LockFile held = lock;
        lock = null;
        return built.then(storeOnceSent(shared, key, held));
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

  /**
   * The entry is written, and the lock released, once the binary is on its way to the other ranks (or, made later,
   * once it is made), on the thread that writes entries ({@link Caches#whenComplete}): the fsyncs are then off the
   * path to every rank's ready kernel, the root's included. A failure of the library's
   * own (INTERNAL_ERROR) is never kept, nor a shared compile that never finished (null). A binary made only when
   * wanted (at the program's close, maybe hours later) is not worth another job's wait: the lock goes at once, and
   * the entry is written without it (a write is atomic; a job that compiled meanwhile writes the same entry).
   *
   * @param held the entry's lock; null where none could be taken
   */
  private Consumer<Envelope> storeOnceSent(KernelCache shared, String key, LockFile held) {
    return sent -> {
      if (sent == null || sent.status() == Envelope.Status.INTERNAL_ERROR) {
        try (LockFile ignored = held) {
          return;
        }
      }
      LockFile kept = sent.madeWhenWanted() ? released(held) : held;
      caches.whenComplete(sent, key, complete -> {
        try (LockFile ignored = kept) {
          if (complete != null) {
            shared.store(key, complete);
          }
        }
      }, kept);
    };
  }

  /** A miss: each cache this rank will write the build's entry into gets its signing key ready meanwhile. */
  private void prepareToStore(KernelCache shared) {
    writers(shared).forEach(KernelCache::prepareToStore);
  }

  /** Releases {@code lock} (if any); null. */
  private static LockFile released(LockFile lock) {
    if (lock != null) {
      lock.close();
    }
    return null;
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
    if (e.status() == Envelope.Status.SHARE) { // never stored by a build: not a result
      log.warn("cache entry {} holds a compile plan, not a result; moving it aside and rebuilding", entry.file());
      cache.discard(key);
      return null;
    }
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
    return !writers(shared).isEmpty();
  }

  /** The caches this rank writes a build's entry into: the shared one, and the node's as its first rank. */
  private List<KernelCache> writers(KernelCache shared) {
    if (caches.settings().access() != CacheSettings.Access.ON) {
      return List.of();
    }
    List<KernelCache> out = new ArrayList<>(2);
    if (shared != null) {
      out.add(shared);
    }
    if (caches.node() != null && caches.nodeComm() != null && caches.nodeComm().rank() == 0) {
      out.add(caches.node());
    }
    return out;
  }

  /**
   * {@link #compile}, or, where {@code ranks} ranks would wait for it and the backend can split it
   * ({@link Backend#compileParts}), the announcement of a compile shared between them, the root's own part
   * already compiling.
   */
  private Obtained compileOrShare(KernelSource request, String target, String key, boolean alone, boolean needBinary,
      int ranks) {
    List<String> parts = alone || ranks < 2 ? List.of() : backend.compileParts(request, ranks);
    if (parts.size() < 2) {
      return compile(request, target, key, alone, needBinary);
    }
    if (parts.size() > ranks) {
      throw new IllegalStateException("the backend " + backend.id() + " split a compile for " + ranks
          + " ranks into " + parts.size() + " parts");
    }
    return Obtained.announcing(new SharedCompile(this, request, target, key, parts));
  }

  /** @param needBinary whether a cache keeps the binary ({@link #kept}); alone, none is made otherwise */
  private Obtained compile(KernelSource request, String target, String key, boolean alone, boolean needBinary) {
    try {
      Compilation c = compileWithin(() -> alone ? backend.compileAlone(request, target, needBinary)
          : backend.compile(request, target), settings.compileTimeout());
      try {
        if (c.binary() != null) {
          return built(request, target, key, c);
        }
        if (!alone || c.program() == null) {
          throw new IllegalStateException("the backend " + backend.id() + " returned no binary for a build that needs one");
        }
        // Alone: the program is ready; its binary comes later (for the cache) or when asked for.
        Envelope.Metadata meta = metadata(request, target, key, c);
        return new Obtained(Envelope.pending(meta, new BinaryFill(c.binaryLater(), c.binaryWhenWanted(), meta,
            settings.compileTimeout(),
            () -> compileWithin(() -> backend.compile(request, target), settings.compileTimeout()))), c.program(), true,
            false);
      } catch (RuntimeException e) {
        release(c);
        throw e;
      }
    } catch (CompileException | IllegalArgumentException | TimeoutException e) {
      return failed(request, target, key, e);
    }
  }

  /** {@link #compile} of the whole request, for a root that shares a compile whose parts do not join. */
  Obtained compileWhole(KernelSource request, String target, String key) {
    return compile(request, target, key, false, true);
  }

  /** What the root sends for a compilation with its binary (which it keeps loaded, if it has a program). */
  Obtained built(KernelSource request, String target, String key, Compilation c) {
    return new Obtained(Envelope.ok(metadata(request, target, key, c), Payload.copyOf(c.binary())), c.program(), true,
        false);
  }

  private Envelope.Metadata metadata(KernelSource request, String target, String key, Compilation c) {
    return metadata(request, target, key, c.program() != null ? c.program().kernelNames() : request.kernelNames(),
        c.buildLog());
  }

  /** The metadata of what this source sends for {@code request}, built for {@code target}. */
  Envelope.Metadata metadata(KernelSource request, String target, String key, List<String> names, String buildLog) {
    return Envelope.Metadata.built(backend.id(), target, names, request.options(), buildLog, key,
        backend.compilerIdentity(target));
  }

  /** The failure envelope every rank throws for a compile that failed ({@link #compileWithin}'s exceptions). */
  Obtained failed(KernelSource request, String target, String key, Exception e) {
    if (e instanceof CompileException ce) {
      return failed(Envelope.Status.COMPILE_FAILED, request, target, key, ce.buildLog(), ce.reason());
    }
    if (e instanceof TimeoutException) {
      return failed(Envelope.Status.COMPILE_TIMED_OUT, request, target, key, "", "the compile did not finish within "
          + settings.compileTimeout().toMillis() / 1000.0 + " s (MPI_BUILD_COMPILE_TIMEOUT)");
    }
    return failed(Envelope.Status.INVALID_REQUEST, request, target, key, "", e.getMessage());
  }

  /**
   * Compiles part {@code part} of a compile another rank shares ({@link SharedCompile}), within the compile
   * timeout: the envelope it sends to the root, its binary or why it failed. Never throws.
   */
  Envelope compilePart(KernelSource request, String target, String part) {
    try {
      Compilation c = compileWithin(() -> backend.compilePart(request, target, part), settings.compileTimeout());
      release(c);
      if (c.binary() == null) {
        throw new IllegalStateException("the backend " + backend.id() + " returned no binary for a part");
      }
      return built(request, target, "", new Compilation(null, c.binary(), c.buildLog())).envelope();
    } catch (CompileException | IllegalArgumentException | TimeoutException e) {
      return failed(request, target, "", e).envelope();
    } catch (RuntimeException | Error e) {
      log.warn("compiling a part of a shared compile failed", e);
      return failed(Envelope.Status.INTERNAL_ERROR, request, target, "", "", RankFailure.describe(e)).envelope();
    }
  }

  /** The backend this source compiles with. */
  Backend backend() {
    return backend;
  }

  /** The settings' compile timeout. */
  Duration compileTimeout() {
    return settings.compileTimeout();
  }

  /**
   * Runs the backend's compile on a worker thread and waits at most {@code timeout}. A compile that runs
   * over is abandoned: interrupted (backends that run a compiler process kill it), and whatever it loads
   * later is released.
   */
  Compilation compileWithin(java.util.concurrent.Callable<Compilation> compile, Duration timeout)
      throws TimeoutException {
    return within(submit(compile), timeout);
  }

  /** Starts {@code compile} on a worker thread; {@link #within} waits for it. */
  Future<Compilation> submit(java.util.concurrent.Callable<Compilation> compile) {
    return compiler.submit(LogContext.carried(compile)); // the rank, in the compile's log lines
  }

  /**
   * Waits at most {@code timeout} for a compile {@link #submit} started. One that runs over is abandoned:
   * interrupted (backends that run a compiler process kill it), and whatever it loads later is released.
   */
  Compilation within(Future<Compilation> f, Duration timeout) throws TimeoutException {
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
  static void release(Compilation c) {
    if (c.binaryLater() != null) {
      c.binaryLater().cancel(true);
    }
    if (c.program() != null) {
      c.program().close();
    }
  }

  Obtained failed(Envelope.Status status, KernelSource request, String target, String key, String buildLog,
      String msg) {
    Envelope.Metadata meta = Envelope.Metadata.failed(backend.id(), target, request.kernelNames(), request.options(),
        buildLog, msg, key);
    return new Obtained(Envelope.failure(status, meta), null, status == Envelope.Status.COMPILE_FAILED, false);
  }
}
