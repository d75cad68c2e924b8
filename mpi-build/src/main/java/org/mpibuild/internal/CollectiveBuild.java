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

  private final Communicator comm;
  private final Backend backend;
  private final Settings settings;
  private final Caches caches;

  private final JobCounters counters;

  public CollectiveBuild(Communicator comm, Backend backend, Settings settings) {
    this(comm, backend, settings, Caches.none(), new JobCounters());
  }

  public CollectiveBuild(Communicator comm, Backend backend, Settings settings, Caches caches, JobCounters counters) {
    this.comm = comm;
    this.backend = backend;
    this.settings = settings;
    this.caches = caches;
    this.counters = counters;
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
    final int rank = comm.rank();
    final int size = comm.size();

    long t0 = System.nanoTime();
    String problem = RequestCheck.problem(request, root, size);
    agree(request, root, problem);
    if (problem != null) {
      throw new IllegalArgumentException(problem);
    }
    long t1 = System.nanoTime();

    List<String> rankTargets = jobTargets();
    long fileOps0 = caches.fileOperations();
    Obtained obtained = null;
    Envelope sent = null;
    if (rank == root) {
      obtained = obtainOnRoot(request, rankTargets, load);
      sent = obtained.envelope;
      counters.rootOutcome(obtained.compiled, obtained.cacheHit, caches.enabled());
    }
    long t2 = System.nanoTime();

    Received received;
    try {
      received = broadcast(sent, root);
    } finally {
      if (rank == root) {
        obtained.afterBroadcast().run();
      }
    }
    long t3 = System.nanoTime();
    Envelope envelope = rank == root ? sent : received.envelope;
    Envelope.Status status = rank == root ? sent.status() : received.header.status();
    if (status != Envelope.Status.OK) {
      throw failure(status, rank == root ? sent.metadata() : received.metadata, root);
    }

    LoadedProgram program = null;
    String failure = null;
    if (rank == root) {
      program = obtained.program;
      if (load && program == null) {
        failure = "this rank compiled for [" + envelope.metadata().target() + "] but cannot load it: its device is ["
            + backend.target() + "]";
      }
    } else if (received.problem != null) {
      failure = received.problem;
    } else if (load) {
      try {
        program = load(envelope);
      } catch (RuntimeException | LinkageError e) {
        failure = describe(e);
        log.debug("load failed", e);
      }
    }
    if (!load && program != null) {
      program.close();
      program = null;
    }
    agreeOnLoad(program, failure);
    storeOnNode(envelope);
    long t4 = System.nanoTime();

    long wait = rank == root ? 0 : received.headerNanos - t2;
    boolean compiled = rank == root && obtained.compiled;
    boolean hit = rank == root && obtained.cacheHit;
    BuildStats stats = new BuildStats(rank, root, compiled, hit, t1 - t0, t2 - t1, wait, t3 - t2 - wait, t4 - t3,
        envelope.payload().length(), caches.fileOperations() - fileOps0);
    counters.add(stats, rank == root && size > 1 ? envelope.payload().length() : 0);
    log.debug("built {} from root {}: {} bytes, compile {} ms, broadcast {} ms, load {} ms",
        envelope.metadata().kernelNames(), root, stats.binaryBytes(), ms(stats.compileNanos()), ms(stats.broadcastNanos()),
        ms(stats.loadNanos()));
    return new Outcome(program, envelope, stats);
  }

  /** Every rank's target when the backend builds for the whole job (one all-gather); else null. */
  private List<String> jobTargets() {
    if (!backend.buildsForJobTargets()) {
      return null;
    }
    byte[][] all = comm.allGather(backend.target().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    List<String> out = new java.util.ArrayList<>();
    for (byte[] b : all) {
      out.add(new String(b, java.nio.charset.StandardCharsets.UTF_8));
    }
    return out;
  }

  private void agree(KernelSource request, int root, String problem) {
    RequestFingerprint mine = RequestFingerprint.of(request, backend.id(), root, settings.chunkBytes(), problem);
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

  /** What the root has before the broadcast: the envelope to send and, on success, its own program. */
  private record Obtained(Envelope envelope, LoadedProgram program, boolean compiled, boolean cacheHit,
      Runnable afterBroadcast) {
    Obtained(Envelope envelope, LoadedProgram program, boolean compiled, boolean cacheHit) {
      this(envelope, program, compiled, cacheHit, () -> { });
    }

    Obtained then(Runnable next) {
      return new Obtained(envelope, program, compiled, cacheHit, next);
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

  private static RuntimeException failure(Envelope.Status status, Envelope.Metadata meta, int root) {
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

  private Received broadcast(Envelope sent, int root) {
    boolean isRoot = comm.rank() == root;
    int first = firstMessageBytes();
    ByteBuffer message = ByteBuffer.allocateDirect(first);
    if (isRoot) {
      byte[] meta = sent.encodeMetadata();
      Payload payload = sent.payload().rechunk(settings.chunkBytes());
      Inline inline = Inline.of(first, meta.length, payload.length());
      message.put(sent.encodeHeader(meta)).put(meta, 0, inline.metadata());
      payload.copyTo(message.slice().limit(inline.payload()));
      comm.broadcast(message.clear(), root);
      ByteBuffer rest = ByteBuffer.allocateDirect(meta.length - inline.metadata()).put(meta, inline.metadata(),
          meta.length - inline.metadata()).flip();
      for (ByteBuffer chunk : chunksOf(rest)) {
        comm.broadcast(chunk, root);
      }
      for (ByteBuffer piece : payload.pieces(inline.payload())) {
        comm.broadcast(piece, root);
      }
      return null;
    }

    comm.broadcast(message, root);
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
    for (ByteBuffer chunk : chunksOf(metaBuf.slice())) {
      comm.broadcast(chunk, root);
    }
    try {
      byte[] m = new byte[metaBuf.capacity()];
      metaBuf.duplicate().clear().get(m);
      r.metadata = Envelope.decodeMetadata(r.header, m);
    } catch (CorruptBinaryException e) {
      r.problem = e.getMessage();
    }

    long length = r.header.payloadLength();
    ByteBuffer inlinePayload = message.duplicate().position(Envelope.HEADER_BYTES + inline.metadata())
        .limit(Envelope.HEADER_BYTES + inline.metadata() + inline.payload());
    if (length > settings.maxBinaryBytes()) {
      // Keep in step with a bounded scratch buffer, then refuse the binary.
      ByteBuffer scratch = ByteBuffer.allocateDirect((int) Math.min(settings.chunkBytes(), length));
      for (int size : Payload.pieceSizes(length, settings.chunkBytes(), inline.payload())) {
        comm.broadcast(scratch.clear().limit(size), root);
      }
      r.problem = "binary of " + length + " bytes exceeds this rank's limit of " + settings.maxBinaryBytes()
          + " (MPI_BUILD_MAX_BINARY_BYTES)";
      return r;
    }
    Payload payload = Payload.allocate(length, settings.chunkBytes());
    payload.copyFrom(inlinePayload);
    for (ByteBuffer piece : payload.pieces(inline.payload())) {
      comm.broadcast(piece, root);
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

  private void agreeOnLoad(LoadedProgram program, String failure) {
    SortedMap<Integer, String> failures = Agreement.failures(comm, failure);
    if (failures.isEmpty()) {
      return;
    }
    if (program != null) {
      program.close();
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
