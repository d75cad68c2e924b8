package org.mpibuild.internal;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.mpibuild.BuildStats;
import org.mpibuild.BuildTimeoutException;
import org.mpibuild.CompileException;
import org.mpibuild.CorruptBinaryException;
import org.mpibuild.KernelBuildException;
import org.mpibuild.KernelLoadException;
import org.mpibuild.KernelSource;
import org.mpibuild.RequestMismatchException;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Compilation;
import org.mpibuild.internal.cache.CacheKey;
import org.mpibuild.internal.cache.CacheLock;
import org.mpibuild.internal.cache.Caches;
import org.mpibuild.internal.cache.KernelCache;
import org.mpibuild.spi.LoadedProgram;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The collective build protocol. Every rank makes the same sequence of collective calls whatever happens,
 * so no rank is ever left waiting for one that has given up:
 *
 * <ol>
 *   <li><b>Agreement.</b> Each rank checks its request locally, then one all-reduce of its fingerprint
 *       tells every rank whether all asked for the same kernel. Only on a mismatch, an all-gather of the
 *       fingerprints lets every rank name the same differing ranks and throw the same error. A bad value
 *       (an out-of-range root, an empty source) is never used in an MPI call.
 *   <li><b>Compile.</b> The root compiles. Any failure becomes an error envelope instead of an exception,
 *       so that the root still takes part in the broadcast.
 *   <li><b>Broadcast.</b> A first message of fixed size: the header (status, lengths, digest), then as
 *       much metadata and payload as fit, so that a small kernel travels in one broadcast; then the rest
 *       in chunks of direct buffers. Receivers check the header before allocating and the digest
 *       before loading. An error envelope makes every rank throw the same exception.
 *   <li><b>Load and agree.</b> Receivers load; one all-reduce says whether anyone failed; if so, an
 *       all-gather of the reasons makes every rank throw the same {@link KernelLoadException}.
 * </ol>
 */
public final class CollectiveBuild {
  private static final Logger log = LoggerFactory.getLogger(CollectiveBuild.class);

  /** What a successful build leaves on one rank. */
  public record Outcome(LoadedProgram program, Envelope envelope, BuildStats stats) {}

  /**
   * One request of a batch, as this rank ends it: the envelope it received (an error envelope if the
   * build failed; every rank of a group holds the same), its loaded program if asked for, its statistics.
   */
  public record Entry(int index, KernelSource request, Envelope envelope, LoadedProgram program, BuildStats stats) {
    /** @return whether the binary was built and, if asked for, loaded */
    public boolean ok() {
      return envelope.status() == Envelope.Status.OK;
    }

    /** @return the exception every rank throws for this failed entry */
    public RuntimeException failure() {
      RuntimeException e = CollectiveBuild.failure(envelope.status(), envelope.metadata(), stats.root());
      return e;
    }
  }

  private final Communicator comm;
  private final Backend backend;
  private final Settings settings;
  private final Caches caches;
  private final JobCounters counters;
  private final JobTargets targets;
  private final Manifest.Recorder recorder;

  /** A protocol without cache; gathers the job's targets (collective). */
  public CollectiveBuild(Communicator comm, Backend backend, Settings settings) {
    this(comm, backend, settings, Caches.none(), new JobCounters());
  }

  /** A protocol that gathers the job's targets (collective). */
  public CollectiveBuild(Communicator comm, Backend backend, Settings settings, Caches caches, JobCounters counters) {
    this(comm, backend, settings, caches, counters, JobTargets.gather(comm, backend), null);
  }

  /**
   * A protocol over {@code comm} for ranks whose targets are already known.
   *
   * @param recorder where the root records every request, or null
   */
  public CollectiveBuild(Communicator comm, Backend backend, Settings settings, Caches caches, JobCounters counters,
      JobTargets targets, Manifest.Recorder recorder) {
    this.comm = comm;
    this.backend = backend;
    this.settings = settings;
    this.caches = caches;
    this.counters = counters;
    this.targets = targets;
    this.recorder = recorder;
  }

  /** The same protocol, carried by another communicator over the same ranks (for asynchronous builds). */
  public CollectiveBuild over(Communicator other) {
    return new CollectiveBuild(other, backend, settings, caches, counters, targets, recorder);
  }

  /** Runs the protocol on every rank of the communicator, loading the kernel everywhere. */
  public Outcome run(KernelSource request, int root) {
    return run(request, root, true);
  }

  /**
   * Runs the protocol on every rank. With {@code load} false, every rank gets the checked binary and
   * nothing is loaded (the outcome's program is null): this works without a device, for example for
   * CUDA targets named explicitly on nodes without a GPU.
   */
  public Outcome run(KernelSource request, int root, boolean load) {
    String problem = RequestCheck.problem(request, root, comm.size());
    Entry e = execute(java.util.Collections.singletonList(request), Integer.toString(root), problem,
        new int[] {targets.distributionRoot(root)}, new int[] {0}, load, null).get(0);
    return new Outcome(e.program(), e.envelope(), e.stats());
  }

  /**
   * Builds every request, the compiles spread over the ranks (see {@link BatchPlan}), and gives every rank
   * every binary. A request that fails to build gives a failed entry, the same on every rank; a binary
   * that some rank cannot load fails the whole call on every rank. With the job split by target, a build
   * failure in any group fails the call on every rank.
   */
  public List<Entry> runBatch(List<KernelSource> requests, boolean load, java.util.function.Consumer<Entry> listener) {
    String problem = RequestCheck.batchProblem(requests, comm.size());
    List<KernelSource> list = problem == null ? requests : List.of();
    Communicator dist = targets.distribution(comm);
    BatchPlan plan = BatchPlan.of(list, dist.size(), settings.batchRanks());
    return execute(list, "batch", problem, plan.owners(), plan.order(), load, listener);
  }

  /**
   * The protocol. {@code owners[i]} is the rank, in the distribution communicator, that obtains request
   * i; {@code order} is the order of the broadcasts. Once the ranks agree, owners obtain their requests on
   * a worker thread, one at a time, so that each owner's next compile overlaps the current broadcast.
   */
  private List<Entry> execute(List<KernelSource> requests, String rootField, String problem, int[] owners,
      int[] order, boolean load, java.util.function.Consumer<Entry> listener) {
    final int rank = comm.rank();
    final Communicator dist = targets.distribution(comm);
    final boolean batch = "batch".equals(rootField);
    long t0 = System.nanoTime();
    long fileOps0 = caches.fileOperations();
    agree(requests, rootField, problem);
    if (problem != null) {
      throw new IllegalArgumentException(problem);
    }
    if (recorder != null && rank == 0) {
      recorder.record(requests, backend.id(), targets.distinct());
    }
    long t1 = System.nanoTime();

    // Owners obtain their requests on a worker thread, one at a time, in broadcast order; the worker never
    // outlives this call, so nothing touches the backend after it returns.
    try (Obtaining work = new Obtaining(requests, owners, order, dist.rank(), load)) {
      return distribute(requests, owners, order, load, listener, batch, work, t0, t1, fileOps0);
    }
  }

  private List<Entry> distribute(List<KernelSource> requests, int[] owners, int[] order, boolean load,
      java.util.function.Consumer<Entry> listener, boolean batch, Obtaining work, long t0, long t1, long fileOps0) {
    final int rank = comm.rank();
    final Communicator dist = targets.distribution(comm);
    int k = requests.size();
    Envelope[] envelopes = new Envelope[k];
    Obtained[] obtained = new Obtained[k];
    String[] problems = new String[k];
    long[] waitNanos = new long[k];
    long[] broadcastNanos = new long[k];
    for (int i : order) {
      boolean owner = dist.rank() == owners[i];
      long b0 = System.nanoTime();
      Envelope sent = null;
      if (owner) {
        obtained[i] = work.get(i);
        sent = obtained[i].envelope;
        counters.rootOutcome(obtained[i].compiled, obtained[i].cacheHit, caches.enabled());
      }
      long b1 = System.nanoTime();
      Received received;
      try {
        received = broadcast(dist, sent, owners[i]);
      } finally {
        if (owner) {
          obtained[i].afterBroadcast().run();
        }
      }
      long b2 = System.nanoTime();
      if (owner) {
        envelopes[i] = sent;
      } else if (received.header.status() != Envelope.Status.OK) {
        envelopes[i] = Envelope.failure(received.header.status(), received.metadata != null ? received.metadata
            : new Envelope.Metadata(backend.id(), "", List.of(), "", "", "the build failed on rank "
                + targets.jobRank(owners[i]) + " and its error report arrived corrupt on this rank", ""));
      } else {
        envelopes[i] = received.envelope; // null if it arrived corrupt; problems[i] says why
        problems[i] = received.problem;
      }
      waitNanos[i] = owner ? 0 : received.headerNanos - b1;
      broadcastNanos[i] = b2 - b1 - waitNanos[i];
      if (listener != null) {
        Envelope arrived = envelopes[i] != null ? envelopes[i] : Envelope.failure(Envelope.Status.INTERNAL_ERROR,
            new Envelope.Metadata(backend.id(), "", List.of(), "", "", problems[i], ""));
        listener.accept(new Entry(i, requests.get(i), arrived, null, new BuildStats(rank, targets.jobRank(owners[i]),
            owner && obtained[i].compiled, owner && obtained[i].cacheHit, 0, 0, 0, 0, 0, arrived.payload().length(), 0)));
      }
    }

    // Build failures are known to every rank of a group. Without groups a single build throws now.
    String localFailure = null;
    for (int i = 0; i < k; i++) {
      if (envelopes[i] != null && envelopes[i].status() != Envelope.Status.OK) {
        if (!batch && !targets.grouped()) {
          throw failure(envelopes[i].status(), envelopes[i].metadata(), targets.jobRank(owners[i]));
        }
        if (targets.grouped() && localFailure == null) {
          localFailure = BuildFailure.encode(envelopes[i], describeRequest(i, k, requests.get(i)),
              targets.jobRank(owners[i]));
        }
      }
    }

    LoadedProgram[] programs = new LoadedProgram[k];
    long[] loadNanos = new long[k];
    for (int i = 0; i < k && localFailure == null; i++) {
      long l0 = System.nanoTime();
      String failure = null;
      if (problems[i] != null) {
        failure = problems[i];
      } else if (envelopes[i].status() != Envelope.Status.OK) {
        continue; // a failed build of a batch: the entry says so on every rank
      } else if (obtained[i] != null) {
        programs[i] = obtained[i].program;
        if (load && programs[i] == null) {
          failure = "this rank compiled for [" + envelopes[i].metadata().target()
              + "] but cannot load it: its device is [" + backend.target() + "]";
        }
      } else if (load) {
        try {
          programs[i] = loadChecked(backend, envelopes[i]);
        } catch (RuntimeException | LinkageError e) {
          failure = describe(e);
          log.debug("load failed", e);
        }
      }
      if (!load && programs[i] != null) {
        programs[i].close();
        programs[i] = null;
      }
      loadNanos[i] = System.nanoTime() - l0;
      if (failure != null) {
        localFailure = batch ? describeRequest(i, k, requests.get(i)) + ": " + failure : failure;
      }
    }
    agreeOnLoad(programs, localFailure);
    for (Envelope e : envelopes) {
      if (e.status() == Envelope.Status.OK) {
        storeOnNode(e);
      }
    }
    long t4 = System.nanoTime();

    List<Entry> entries = new ArrayList<>(k);
    long fileOps = caches.fileOperations() - fileOps0;
    for (int i = 0; i < k; i++) {
      boolean owner = obtained[i] != null;
      BuildStats stats = new BuildStats(rank, targets.jobRank(owners[i]),
          owner && obtained[i].compiled, owner && obtained[i].cacheHit, t1 - t0,
          owner ? obtained[i].nanos : 0, waitNanos[i], broadcastNanos[i], loadNanos[i],
          envelopes[i].payload().length(), i == 0 ? fileOps : 0);
      if (envelopes[i].status() == Envelope.Status.OK) {
        counters.add(stats, owner && dist.size() > 1 ? envelopes[i].payload().length() : 0);
      }
      entries.add(new Entry(i, requests.get(i), envelopes[i], programs[i], stats));
      log.debug("built {} from rank {}: {} bytes, compile {} ms, broadcast {} ms, load {} ms",
          envelopes[i].metadata().kernelNames(), stats.root(), stats.binaryBytes(), ms(stats.compileNanos()),
          ms(stats.broadcastNanos()), ms(stats.loadNanos()));
    }
    log.debug("{} request(s) in {} ms", k, ms(t4 - t0));
    return entries;
  }

  private void agree(List<KernelSource> requests, String root, String problem) {
    RequestFingerprint mine = RequestFingerprint.of(requests, backend.id(), root, settings.chunkBytes(), problem);
    if (RequestFingerprint.agreed(comm.allReduceMax(mine.agreementVector()))) {
      return;
    }
    byte[][] gathered = comm.allGather(mine.toBytes());
    RequestFingerprint[] all = new RequestFingerprint[gathered.length];
    for (int i = 0; i < all.length; i++) {
      all[i] = RequestFingerprint.fromBytes(gathered[i]);
    }
    int[] reference = new int[1];
    Map<Integer, List<String>> differing = RequestFingerprint.differingRanks(all, reference);
    StringBuilder msg = new StringBuilder("ranks asked for different kernels: ")
        .append(differing.size()).append(" of ").append(all.length).append(" ranks differ from rank ")
        .append(reference[0]);
    if (all[reference[0]].problem() != null) {
      msg.append(" (whose request is invalid: ").append(all[reference[0]].problem()).append(')');
    }
    for (Map.Entry<Integer, List<String>> e : differing.entrySet()) {
      msg.append("\n  rank ").append(e.getKey()).append(" differs in ").append(String.join(", ", e.getValue()));
      String p = all[e.getKey()].problem();
      if (p != null) {
        msg.append(" (").append(p).append(')');
      }
    }
    throw new RequestMismatchException(msg.toString(), differing);
  }

  /**
   * What the root has before the broadcast: the envelope to send and, on success, its own program; what
   * to do once the binary is on its way; how long obtaining it took.
   */
  private record Obtained(Envelope envelope, LoadedProgram program, boolean compiled, boolean cacheHit,
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
   * The requests this rank owns, obtained one at a time on a worker thread in broadcast order, so that
   * at most one compile runs per rank and the next compile overlaps the current broadcast.
   */
  private final class Obtaining implements AutoCloseable {
    private final java.util.Map<Integer, Future<Obtained>> futures = new java.util.HashMap<>();
    private final ExecutorService worker;
    private final java.util.Set<Integer> taken = new java.util.HashSet<>();
    private volatile boolean abandoned;

    Obtaining(List<KernelSource> requests, int[] owners, int[] order, int me, boolean load) {
      worker = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "mpi-build-obtain");
        t.setDaemon(true);
        return t;
      });
      List<String> buildTargets = targets.buildTargets();
      for (int i : order) {
        if (owners[i] == me) {
          KernelSource request = requests.get(i);
          futures.put(i, worker.submit(() -> {
            if (abandoned) {
              return null;
            }
            try (LogContext ignored = LogContext.rank(comm.rank())) {
              long t0 = System.nanoTime();
              return obtainOnRoot(request, buildTargets, load).took(System.nanoTime() - t0);
            }
          }));
        }
      }
      worker.shutdown();
    }

    /** Request i's result; waits for it. Never throws for a failed build: that is an error envelope. */
    Obtained get(int i) {
      try {
        Obtained o = futures.get(i).get();
        taken.add(i);
        return o;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for this rank's compile", e);
      } catch (ExecutionException e) {
        throw new IllegalStateException("obtaining a binary failed unexpectedly", e.getCause());
      }
    }

    /**
     * After a failure midway: drops what has not started, waits for the compile in progress (the backend
     * may be closed next), and releases whatever was obtained but never broadcast. A no-op after success.
     */
    @Override
    public void close() {
      // Never interrupt: a compile in progress must end before the backend may close.
      abandoned = true;
      try {
        if (!worker.awaitTermination(settings.compileTimeout().toMillis() + 10_000, TimeUnit.MILLISECONDS)) {
          log.warn("a compile was still running when the build ended");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      for (Map.Entry<Integer, Future<Obtained>> e : futures.entrySet()) {
        if (taken.contains(e.getKey()) || !e.getValue().isDone()) {
          continue;
        }
        try {
          Obtained o = e.getValue().get();
          if (o == null) {
            continue;
          }
          o.afterBroadcast().run();
          if (o.program() != null) {
            o.program().close();
          }
        } catch (Exception | Error ignored) {
          // failed: nothing to release
        }
      }
    }
  }

  /**
   * Gets the binary on the root: from the node-local cache, else the shared cache, else by compiling with
   * the shared cache's lock held so that concurrent jobs compile once. Never throws: any failure becomes
   * an error envelope, so that the root still takes part in the broadcast.
   */
  private Obtained obtainOnRoot(KernelSource request, List<String> rankTargets, boolean load) {
    String target = "";
    String key = "";
    try {
      target = backend.buildTarget(rankTargets == null ? List.of(backend.target()) : rankTargets);
      if (!caches.enabled()) {
        return compile(request, target, "");
      }
      KernelCache shared = caches.shared();
      key = CacheKey.of(request, backend.id(), backend.compilerIdentity(target), target);
      Obtained hit = fromCache(caches.node(), key, load);
      if (hit == null) {
        hit = fromCache(shared, key, load);
      }
      if (hit != null) {
        return hit;
      }
      if (shared == null) {
        return compile(request, target, key);
      }
      CacheLock lock = shared.lock(key);
      try {
        hit = fromCache(shared, key, load); // another job may have written it while this one waited
        if (hit != null) {
          return hit;
        }
        Obtained built = compile(request, target, key);
        // The entry is written, and the lock released, once the binary is on its way to the other ranks:
        // the fsyncs are then off the path to every rank's ready kernel.
        String entryKey = key;
        CacheLock held = lock;
        lock = null;
        return built.then(() -> {
          try (CacheLock ignored = held) {
            shared.store(entryKey, built.envelope);
          }
        });
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
      return failed(Envelope.Status.INTERNAL_ERROR, request, target, key, "", describe(e));
    }
  }

  /** A usable entry of {@code cache}, loaded on the root; null on a miss or an entry the device refuses. */
  private Obtained fromCache(KernelCache cache, String key, boolean load) {
    if (cache == null) {
      return null;
    }
    KernelCache.Entry entry = cache.lookup(key);
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
      return new Obtained(e, loadChecked(backend, e), false, true);
    } catch (RuntimeException | LinkageError ex) {
      log.warn("cache entry {} cannot be loaded ({}); moving it aside and rebuilding", entry.file(), describe(ex));
      cache.discard(key);
      return null;
    }
  }

  private Obtained compile(KernelSource request, String target, String key) {
    try {
      Compilation c = compileWithin(request, target, settings.compileTimeout());
      List<String> names = c.program() != null ? c.program().kernelNames() : request.kernelNames();
      Envelope.Metadata meta = new Envelope.Metadata(backend.id(), target, names, request.options(), c.buildLog(), "",
          key, backend.compilerIdentity(target));
      return new Obtained(Envelope.ok(meta, Payload.copyOf(c.binary(), settings.chunkBytes())), c.program(), true,
          false);
    } catch (CompileException e) {
      return failed(Envelope.Status.COMPILE_FAILED, request, target, key, e.buildLog(), rawMessage(e));
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
  private Compilation compileWithin(KernelSource request, String target, java.time.Duration timeout)
      throws TimeoutException {
    ExecutorService worker = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "mpi-build-compile");
      t.setDaemon(true);
      return t;
    });
    Future<Compilation> f = worker.submit(() -> backend.compile(request, target));
    worker.shutdown();
    try {
      return f.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      CompletableFuture.runAsync(() -> {
        try {
          LoadedProgram late = f.get().program();
          if (late != null) {
            late.close();
          }
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

  private Obtained failed(Envelope.Status status, KernelSource request, String target, String key, String buildLog,
      String msg) {
    Envelope.Metadata meta = new Envelope.Metadata(backend.id(), target, request.kernelNames(), request.options(),
        buildLog, msg, key);
    return new Obtained(Envelope.failure(status, meta), null, status == Envelope.Status.COMPILE_FAILED, false);
  }

  /** After a successful build, one rank per node writes the node-local cache if it lacks the entry. */
  private void storeOnNode(Envelope envelope) {
    KernelCache node = caches.node();
    String key = envelope.metadata().cacheKey();
    if (node == null || caches.nodeComm() == null || key.isEmpty() || caches.nodeComm().rank() != 0) {
      return;
    }
    if (!node.exists(key)) {
      node.store(key, envelope);
    }
  }

  /** The message of a compile exception without the build log that its constructor appended. */
  private static String rawMessage(CompileException e) {
    String m = e.getMessage();
    int cut = m.indexOf("\n--- build log ---");
    return cut < 0 ? m : m.substring(0, cut);
  }

  /** "request 3 of 32 (kernels [saxpy])": a request of a batch, for messages. */
  private static String describeRequest(int i, int k, KernelSource request) {
    return k == 1 ? "the request" : "request " + i + " of " + k + " (kernels " + request.kernelNames() + ")";
  }

  static RuntimeException failure(Envelope.Status status, Envelope.Metadata meta, int root) {
    if (meta == null) {
      return new KernelBuildException("the build failed on root " + root
          + " and its error report arrived corrupt on this rank");
    }
    String where = " (on root " + root + ")";
    switch (status) {
      case COMPILE_FAILED:
        return new CompileException(meta.error() + where, meta.buildLog());
      case INVALID_REQUEST:
        return new IllegalArgumentException(meta.error());
      case COMPILE_TIMED_OUT:
        return new BuildTimeoutException(meta.error() + where);
      default:
        return new KernelBuildException(meta.error() + where);
    }
  }

  /** What a receiver got: the header always, the rest unless it was corrupt. */
  private static final class Received {
    Envelope.Header header;
    Envelope.Metadata metadata;
    Envelope envelope;
    String problem;
    long headerNanos;
  }

  /** Largest first message: header, metadata and the start of the binary travel together. */
  static final int INLINE_LIMIT = 64 << 10;

  /**
   * The size of the first message: the header, then as much metadata and binary as fit, so that a small
   * kernel travels in one broadcast. Never more than the chunk size, never less than the header.
   */
  private int firstMessageBytes() {
    return Math.max(Envelope.HEADER_BYTES, Math.min(INLINE_LIMIT, settings.chunkBytes()));
  }

  /** How many metadata and binary bytes the first message carries, computed alike on every rank. */
  private record Inline(int metadata, int payload) {
    static Inline of(int first, int metadataLength, long payloadLength) {
      int meta = Math.min(metadataLength, first - Envelope.HEADER_BYTES);
      int payload = meta == metadataLength ? (int) Math.min(payloadLength, first - Envelope.HEADER_BYTES - meta) : 0;
      return new Inline(meta, payload);
    }
  }

  private Received broadcast(Communicator comm, Envelope sent, int root) {
    boolean isRoot = comm.rank() == root;
    int first = firstMessageBytes();
    ByteBuffer message = ByteBuffer.allocateDirect(first);
    if (isRoot) {
      byte[] meta = sent.encodeMetadata();
      Payload payload = sent.payload().rechunk(settings.chunkBytes());
      Inline inline = Inline.of(first, meta.length, payload.length());
      message.put(sent.encodeHeader(meta)).put(meta, 0, inline.metadata());
      payload.copyTo(message.slice().limit(inline.payload()));
      // Every message is a non-blocking broadcast on every rank (MPI never matches a blocking collective
      // with a non-blocking one), all started at once and waited for without spinning.
      List<Communicator.Request> started = new ArrayList<>();
      started.add(comm.iBroadcast(message.clear(), root));
      ByteBuffer rest = ByteBuffer.allocateDirect(meta.length - inline.metadata()).put(meta, inline.metadata(),
          meta.length - inline.metadata()).flip();
      for (ByteBuffer chunk : chunksOf(rest)) {
        started.add(comm.iBroadcast(chunk, root));
      }
      for (ByteBuffer piece : payload.pieces(inline.payload())) {
        started.add(comm.iBroadcast(piece, root));
      }
      started.forEach(CollectiveBuild::awaitIdly);
      return null;
    }

    // The first message may wait for a compile. Wait without spinning, so that the waiting ranks leave
    // the cores to the compiles (MPI's blocking calls poll at full speed).
    awaitIdly(comm.iBroadcast(message, root));
    Received r = new Received();
    r.headerNanos = System.nanoTime();
    try {
      r.header = Envelope.decodeHeader(message.duplicate().limit(Envelope.HEADER_BYTES), Long.MAX_VALUE);
    } catch (CorruptBinaryException e) {
      // Without a trustworthy header this rank cannot know how many chunks follow, so it cannot keep in
      // step with the others. Ending the job is the only way to leave nobody waiting.
      comm.abort("mpi-build: rank " + comm.rank() + " received a corrupt header from root " + root + ": "
          + e.getMessage(), 3);
      throw e;
    }
    Inline inline = Inline.of(first, r.header.metadataLength(), r.header.payloadLength());
    ByteBuffer metaBuf = ByteBuffer.allocateDirect(r.header.metadataLength());
    metaBuf.put(message.duplicate().position(Envelope.HEADER_BYTES).limit(Envelope.HEADER_BYTES + inline.metadata()));
    List<Communicator.Request> started = new ArrayList<>();
    for (ByteBuffer chunk : chunksOf(metaBuf.slice())) {
      started.add(comm.iBroadcast(chunk, root));
    }
    long length = r.header.payloadLength();
    ByteBuffer inlinePayload = message.duplicate().position(Envelope.HEADER_BYTES + inline.metadata())
        .limit(Envelope.HEADER_BYTES + inline.metadata() + inline.payload());
    Payload payload = null;
    if (length > settings.maxBinaryBytes()) {
      started.forEach(CollectiveBuild::awaitIdly);
      started.clear();
      // Keep in step with a bounded scratch buffer, one piece at a time, then refuse the binary.
      ByteBuffer scratch = ByteBuffer.allocateDirect((int) Math.min(settings.chunkBytes(), length));
      for (int size : Payload.pieceSizes(length, settings.chunkBytes(), inline.payload())) {
        awaitIdly(comm.iBroadcast(scratch.clear().limit(size), root));
      }
    } else {
      payload = Payload.allocate(length, settings.chunkBytes());
      payload.copyFrom(inlinePayload);
      for (ByteBuffer piece : payload.pieces(inline.payload())) {
        started.add(comm.iBroadcast(piece, root));
      }
    }
    started.forEach(CollectiveBuild::awaitIdly);
    try {
      byte[] m = new byte[metaBuf.capacity()];
      metaBuf.duplicate().clear().get(m);
      r.metadata = Envelope.decodeMetadata(r.header, m);
    } catch (CorruptBinaryException e) {
      r.problem = e.getMessage();
    }
    if (payload == null) {
      r.problem = "binary of " + length + " bytes exceeds this rank's limit of " + settings.maxBinaryBytes()
          + " (MPI_BUILD_MAX_BINARY_BYTES)";
      return r;
    }
    if (r.problem == null) {
      try {
        r.envelope = Envelope.received(r.header, r.metadata, payload);
      } catch (CorruptBinaryException e) {
        r.problem = e.getMessage();
      }
    }
    return r;
  }

  /**
   * Waits for a request while leaving the core to others: a short spin, then sleeps that grow to 1 ms.
   * A rank waiting for another rank's compile then costs no CPU, which matters when ranks share cores
   * with compiles (oversubscribed nodes, batch builds with a compile on every rank).
   */
  static void awaitIdly(Communicator.Request request) {
    long spinUntil = System.nanoTime() + 50_000;
    long sleep = 10_000;
    while (!request.test()) {
      if (System.nanoTime() < spinUntil) {
        Thread.onSpinWait();
      } else {
        java.util.concurrent.locks.LockSupport.parkNanos(sleep);
        sleep = Math.min(sleep * 2, 1_000_000);
      }
    }
  }

  private List<ByteBuffer> chunksOf(ByteBuffer whole) {
    List<ByteBuffer> out = new ArrayList<>();
    for (int pos = 0; pos < whole.limit(); pos += settings.chunkBytes()) {
      int end = (int) Math.min((long) pos + settings.chunkBytes(), whole.limit());
      out.add(whole.duplicate().position(pos).limit(end).slice());
    }
    return out;
  }

  private LoadedProgram load(Envelope envelope) {
    return loadChecked(backend, envelope);
  }

  /**
   * Loads an envelope's binary with {@code backend} after checking that it was built by the same backend
   * for the same target. Throws with a message for a person if not, or if the device refuses it.
   */
  public static LoadedProgram loadChecked(Backend backend, Envelope envelope) {
    Envelope.Metadata meta = envelope.metadata();
    if (!meta.backend().equals(backend.id())) {
      throw new IllegalStateException("binary is for backend '" + meta.backend() + "', this rank uses '"
          + backend.id() + "'");
    }
    if (!backend.canLoad(meta.target())) {
      throw new IllegalStateException("binary was built for target [" + meta.target()
          + "], this rank's device is [" + backend.target() + "]");
    }
    return backend.load(envelope.payload().toByteArray(), meta.kernelNames());
  }

  /**
   * Whether every rank of the job succeeded; if not, every rank releases its programs and throws the
   * same exception: a build failure of some target group if there was one, else a load failure.
   */
  private void agreeOnLoad(LoadedProgram[] programs, String failure) {
    SortedMap<Integer, String> failures = Agreement.failures(comm, failure);
    if (failures.isEmpty()) {
      return;
    }
    for (LoadedProgram p : programs) {
      if (p != null) {
        p.close();
      }
    }
    RuntimeException buildFailure = BuildFailure.decode(failures);
    if (buildFailure != null) {
      throw buildFailure;
    }
    throw new KernelLoadException("the kernel could not be loaded on " + failures.size() + " of " + comm.size()
        + " ranks " + failures.keySet() + Agreement.describe(failures), failures);
  }

  private static String describe(Throwable e) {
    String m = e.getMessage();
    return e.getClass().getSimpleName() + (m == null || m.isBlank() ? "" : ": " + m);
  }

  private static long ms(long nanos) {
    return nanos / 1_000_000;
  }
}
