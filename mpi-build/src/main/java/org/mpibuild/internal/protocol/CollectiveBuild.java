package org.mpibuild.internal.protocol;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.mpibuild.BuildStats;
import org.mpibuild.KernelSource;
import org.mpibuild.internal.agreement.RankFailure;
import org.mpibuild.internal.agreement.RequestAgreement;
import org.mpibuild.internal.agreement.RequestFingerprint;
import org.mpibuild.internal.cache.Caches;
import org.mpibuild.internal.cache.KernelCache;
import org.mpibuild.internal.comm.Backoff;
import org.mpibuild.internal.manifest.ManifestWriter;
import org.mpibuild.internal.settings.CoreSettings;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.internal.startup.JobTargets;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.internal.wire.EnvelopeBroadcast;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.LoadedProgram;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The collective build protocol. Every rank makes the same sequence of collective calls whatever happens,
 * so no rank is ever left waiting for one that has given up:
 *
 * <ol>
 *   <li><b>Verdict.</b> Each rank checks its request locally, then one all-reduce of its fingerprint
 *       tells every rank whether all asked for the same kernel. Only on a mismatch, an all-gather of the
 *       fingerprints lets every rank name the same differing ranks and throw the same error. A bad value
 *       (an out-of-range root, an empty source) is never used in an MPI call.
 *   <li><b>Compile.</b> The root compiles, or shares its compile with the ranks that would wait for it
 *       ({@link ShareSteps}). Any failure becomes an error envelope instead of an exception,
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
      return RankFailure.exceptionFor(envelope.status(), envelope.metadata(), stats.root());
    }
  }

  private final Communicator comm;
  private final Backend backend;
  private final Settings settings;
  private final Caches caches;
  private final JobCounters counters;
  private final JobTargets targets;
  private final ManifestWriter.Recorder recorder;
  private final BinarySource source;
  private final EnvelopeBroadcast broadcaster;
  private final Backoff waiting;
  /** Whether and with how many ranks this protocol shares a compile ({@link ShareSteps}). */
  private final ShareSteps sharing;

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
      JobTargets targets, ManifestWriter.Recorder recorder) {
    this.comm = comm;
    this.backend = backend;
    this.settings = settings;
    this.caches = caches;
    this.counters = counters;
    this.targets = targets;
    this.recorder = recorder;
    this.source = new BinarySource(backend, settings, caches);
    this.waiting = settings.waiting();
    this.broadcaster = new EnvelopeBroadcast(settings, waiting);
    this.sharing = new ShareSteps(CoreSettings.COMPILE_SHARE.read(settings.source()), comm, source, broadcaster,
        targets);
  }

  /**
   * This protocol on a node of {@code nodeRanks} ranks and {@code nodeCores} processors ({@link ShareSteps#onNode});
   * on the ranks likely to compile, where the node has a core for each of its ranks (else a rank's warm-up would find
   * no idle time), the backend prepares its compiles ({@link Backend#prepareCompiles}).
   */
  public CollectiveBuild onNode(int nodeRanks, int nodeCores) {
    sharing.onNode(nodeRanks, nodeCores);
    if (comm.size() > 1 && nodeRanks <= nodeCores && comm.rank() < sharing.ranks(comm.size())
        && CoreSettings.COMPILE_AHEAD.read(settings.source()) == 1) {
      backend.prepareCompiles();
    }
    return this;
  }

  /**
   * The same protocol, its communicators (the job's and, when the job is split by target, this rank's
   * group's) each carried by {@code wrap}'s wrapper over the same ranks (for asynchronous builds).
   */
  public CollectiveBuild over(UnaryOperator<Communicator> wrap) {
    CollectiveBuild async = new CollectiveBuild(wrap.apply(comm), backend, settings, caches, counters,
        targets.over(wrap), recorder);
    async.sharing.off();
    return async;
  }

  /** How this protocol's ranks wait for MPI. */
  Backoff waiting() {
    return waiting;
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
    if (problem == null && load) {
      problem = backend.requestProblem(request);
    }
    Entry e = execute(Collections.singletonList(request), RequestFingerprint.Shape.SINGLE, root, problem,
        new int[] {targets.distributionRoot(root)}, new int[] {0}, load, null).get(0);
    return new Outcome(e.program(), e.envelope(), e.stats());
  }

  /**
   * Builds every request, the compiles spread over the ranks (see {@link BatchPlan}), and gives every rank
   * every binary. A request that fails to build gives a failed entry, the same on every rank; a binary
   * that some rank cannot load fails the whole call on every rank. With the job split by target, a build
   * failure in any group fails the call on every rank.
   */
  public List<Entry> runBatch(List<KernelSource> requests, boolean load, Consumer<Entry> listener) {
    String problem = RequestCheck.batchProblem(requests, comm.size());
    for (int i = 0; problem == null && load && i < requests.size(); i++) {
      String p = backend.requestProblem(requests.get(i));
      problem = p == null ? null : "request " + i + " of " + requests.size() + ": " + p;
    }
    List<KernelSource> list = problem == null ? requests : List.of();
    Communicator dist = targets.distribution(comm);
    BatchPlan plan = BatchPlan.of(list, dist.size(), settings.batchRanks());
    return execute(list, RequestFingerprint.Shape.BATCH, -1, problem, plan.owners(), plan.order(), load, listener);
  }

  /**
   * The protocol. {@code owners[i]} is the rank, in the distribution communicator, that obtains request
   * i; {@code order} is the order of the broadcasts. Once the ranks agree, owners obtain their requests on
   * a worker thread, one at a time, so that each owner's next compile overlaps the current broadcast.
   */
  private List<Entry> execute(List<KernelSource> requests, RequestFingerprint.Shape shape, int root, String problem,
      int[] owners, int[] order, boolean load, Consumer<Entry> listener) {
    final int rank = comm.rank();
    final Communicator dist = targets.distribution(comm);
    final boolean batch = shape == RequestFingerprint.Shape.BATCH;
    long t0 = System.nanoTime();
    long fileOps0 = caches.fileOperations();
    RequestAgreement.agree(comm, RequestFingerprint.of(requests, backend.id(), shape, root, settings.chunkBytes(),
        problem), settings.collectiveTimeout(), waiting, () -> "the build of " + describe(requests));
    if (problem != null) {
      throw new IllegalArgumentException(problem);
    }
    if (recorder != null && rank == 0) {
      recorder.record(requests, backend.id(), targets.distinct());
    }
    long t1 = System.nanoTime();

    // Owners obtain their requests on a worker thread, one at a time, in broadcast order; the worker never
    // outlives this call, so nothing touches the backend after it returns.
    // Alone (one rank, loading), nobody waits for the binary: the program may come first and the binary later.
    boolean alone = load && comm.size() == 1;
    // A single request that every rank loads: the ranks that would wait for the root may share its compile.
    int sharers = load && !batch && requests.size() == 1 ? sharing.ranks(dist.size()) : 1;
    try (RootWorker work = new RootWorker(source, rank, targets.buildTargets(), settings.compileTimeout(), requests,
        owners, order, dist.rank(), load, alone, sharers)) {
      List<Slot> slots = new ArrayList<>(requests.size());
      for (int i = 0; i < requests.size(); i++) {
        slots.add(new Slot(i, requests.get(i), owners[i], targets.jobRank(owners[i]), dist.rank() == owners[i]));
      }
      for (int i : order) {
        broadcast(slots.get(i), dist, work, load, listener);
      }
      RankFailure failure = buildFailure(slots, batch);
      if (failure == null) {
        failure = loadAll(slots, load, batch);
      }
      ProgramLoader.agreeOnLoad(comm, programs(slots), failure);
      slots.stream().filter(Slot::built).forEach(slot -> storeOnNode(slot.envelope));
      return entries(slots, t1 - t0, caches.fileOperations() - fileOps0, dist.size() > 1, t0);
    }
  }

  /**
   * Broadcasts one request's envelope from its owner, which obtains it first (from its worker), and keeps
   * what arrived; tells the listener, if any.
   */
  private void broadcast(Slot slot, Communicator dist, RootWorker work, boolean load, Consumer<Entry> listener) {
    Envelope sent = null;
    if (slot.mine) {
      slot.obtained = work.get(slot.index);
      sent = slot.obtained.envelope();
    }
    long b1 = System.nanoTime();
    EnvelopeBroadcast.Received received;
    try {
      received = broadcaster.broadcast(dist, sent, slot.owner, load); // a loaded binary's kernel releases it
      if ((slot.mine ? sent.status() : received.header().status()) == Envelope.Status.SHARE) {
        long s0 = System.nanoTime();
        BinarySource.Obtained result = sharing.exchange(dist, slot, slot.mine ? sent : received.envelope(),
            received == null ? null : received.problem());
        if (slot.mine) {
          slot.shareNanos = System.nanoTime() - s0;
          slot.obtained = result.took(slot.obtained.nanos() + slot.shareNanos);
          sent = slot.obtained.envelope();
        }
        received = broadcaster.broadcast(dist, sent, slot.owner, load);
      }
    } finally {
      if (slot.mine) {
        slot.obtained.afterBroadcast().run();
      }
    }
    long b2 = System.nanoTime();
    if (slot.mine) {
      counters.rootOutcome(slot.obtained.compiled(), slot.obtained.cacheHit(), caches.enabled());
      slot.envelope = sent;
    } else if (received.header().status() == Envelope.Status.SHARE) {
      slot.envelope = Envelope.failure(Envelope.Status.INTERNAL_ERROR, failureMetadata("root " + slot.jobRoot
          + " announced a shared compile where its result was due"));
    } else if (received.header().status() != Envelope.Status.OK) {
      slot.envelope = Envelope.failure(received.header().status(), received.metadata() != null ? received.metadata()
          : failureMetadata("the build failed on rank " + slot.jobRoot + " and its error report arrived corrupt on "
              + "this rank"));
    } else {
      slot.envelope = received.envelope();
      slot.problem = received.problem();
    }
    slot.waitNanos = slot.mine ? 0 : received.headerNanos() - b1;
    slot.broadcastNanos = b2 - b1 - slot.waitNanos - slot.shareNanos;
    if (listener != null) {
      Envelope arrived = slot.envelope != null ? slot.envelope
          : Envelope.failure(Envelope.Status.INTERNAL_ERROR, failureMetadata(slot.problem));
      BuildStats stats = new BuildStatsBuilder().rank(comm.rank()).root(slot.jobRoot).compiled(slot.compiled())
          .cacheHit(slot.cacheHit()).binaryBytes(arrived.payload().length()).build();
      listener.accept(new Entry(slot.index, slot.request, arrived, null, stats));
    }
  }

  private Envelope.Metadata failureMetadata(String error) {
    return Envelope.Metadata.errorOnly(backend.id(), error);
  }

  /**
   * A build failure that every rank of a group knows; null if none. Without groups, a single build throws it
   * at once (every rank received the same error envelope), and a batch keeps it in its entry.
   */
  private RankFailure buildFailure(List<Slot> slots, boolean batch) {
    for (Slot slot : slots) {
      Envelope e = slot.envelope;
      if (e == null || e.status() == Envelope.Status.OK) {
        continue;
      }
      if (!batch && !targets.grouped()) {
        throw RankFailure.exceptionFor(e.status(), e.metadata(), slot.jobRoot);
      }
      if (targets.grouped()) {
        return RankFailure.build(e, BatchPlan.describeRequest(slot.index, slots.size(), slot.request), slot.jobRoot);
      }
    }
    return null;
  }

  /** Loads every built request on this rank (if asked to); the first that fails stops it, and is returned. */
  private RankFailure loadAll(List<Slot> slots, boolean load, boolean batch) {
    for (Slot slot : slots) {
      long l0 = System.nanoTime();
      String failure = slot.problem != null ? slot.problem : slot.built() ? load(slot, load) : null;
      slot.loadNanos = System.nanoTime() - l0;
      if (failure != null) {
        String what = BatchPlan.describeRequest(slot.index, slots.size(), slot.request);
        return RankFailure.problem(batch ? (what.isEmpty() ? "the request" : what) + ": " + failure : failure);
      }
    }
    return null;
  }

  /**
   * Loads one built request: the owner already holds its program (if its device can run it); the others
   * load what they received. Without {@code load}, nothing stays loaded. Returns why it failed, or null.
   */
  private String load(Slot slot, boolean load) {
    String failure = null;
    if (slot.obtained != null) {
      slot.program = slot.obtained.program();
      if (load && slot.program == null) {
        failure = "this rank compiled for [" + slot.envelope.metadata().target() + "] but cannot load it: its device is ["
            + backend.target() + "]";
      }
    } else if (load) {
      try {
        slot.program = ProgramLoader.loadChecked(backend, slot.envelope);
      } catch (RuntimeException | LinkageError e) {
        failure = RankFailure.describe(e);
        log.debug("load failed", e);
      }
    }
    if (!load && slot.program != null) {
      slot.program.close();
      slot.program = null;
    }
    return failure;
  }

  private static LoadedProgram[] programs(List<Slot> slots) {
    return slots.stream().map(slot -> slot.program).toArray(LoadedProgram[]::new);
  }

  /**
   * The call's entries, with their statistics, counted in the job's counters.
   *
   * @param agreeNanos the time the ranks took to agree on the request
   * @param fileOps the cache's file operations during the call, counted on the first entry
   * @param shared whether the binaries were sent to other ranks
   */
  private List<Entry> entries(List<Slot> slots, long agreeNanos, long fileOps, boolean shared, long t0) {
    List<Entry> entries = new ArrayList<>(slots.size());
    for (Slot slot : slots) {
      BuildStats stats = new BuildStatsBuilder().rank(comm.rank()).root(slot.jobRoot).compiled(slot.compiled())
          .cacheHit(slot.cacheHit()).agreementNanos(agreeNanos).obtainNanos(slot.mine ? slot.obtained.nanos() : 0)
          .waitNanos(slot.waitNanos).broadcastNanos(slot.broadcastNanos).loadNanos(slot.loadNanos)
          .binaryBytes(slot.envelope.payload().length()).cacheFileOperations(slot.index == 0 ? fileOps : 0).build();
      if (slot.built()) {
        counters.add(stats, (slot.mine && shared ? slot.envelope.payload().length() : 0) + slot.partBytes);
      }
      entries.add(new Entry(slot.index, slot.request, slot.envelope, slot.program, stats));
      log.debug("built {} from rank {}: {} bytes, compile {} ms, broadcast {} ms, load {} ms",
          slot.envelope.metadata().kernelNames(), stats.root(), stats.binaryBytes(), ms(stats.obtainNanos()),
          ms(stats.broadcastNanos()), ms(stats.loadNanos()));
    }
    log.debug("{} request(s) in {} ms", slots.size(), ms(System.nanoTime() - t0));
    return entries;
  }

  /** After a successful build, one rank per node writes the node-local cache if it lacks the entry. */
  private void storeOnNode(Envelope envelope) {
    KernelCache node = caches.node();
    String key = envelope.metadata().cacheKey();
    if (node == null || caches.nodeComm() == null || key.isEmpty() || caches.nodeComm().rank() != 0) {
      return;
    }
    // written after this call returns: a payload lent by the broadcast's pool may be reused by then
    caches.whenComplete(envelope.detached(), key, complete -> {
      if (complete != null && !node.exists(key)) {
        node.store(key, complete);
      }
    });
  }

  private static long ms(long nanos) {
    return nanos / 1_000_000;
  }

  /**
   * The first failed entry's exception, in list order, after closing every entry's program; null when every
   * entry built. Every rank finds the same one.
   */
  public static RuntimeException firstFailure(List<Entry> entries) {
    RuntimeException failure = null;
    for (Entry e : entries) {
      if (!e.ok() && failure == null) {
        failure = e.failure();
      }
    }
    if (failure != null) {
      for (Entry e : entries) {
        if (e.program() != null) {
          e.program().close();
        }
      }
    }
    return failure;
  }

  /**
   * For each entry, whether the rank that obtained it read it from the cache (only that rank knows), the
   * same on every rank. Collective.
   */
  public boolean[] cached(List<Entry> entries) {
    byte[] mine = new byte[entries.size()];
    for (int i = 0; i < mine.length; i++) {
      BuildStats s = entries.get(i).stats();
      mine[i] = (byte) (s.compiled() ? 1 : s.cacheHit() ? 2 : 0);
    }
    byte[] how = new byte[mine.length];
    for (byte[] theirs : comm.allGather(mine)) {
      for (int i = 0; i < how.length; i++) {
        how[i] = (byte) Math.max(how[i], theirs[i]);
      }
    }
    boolean[] out = new boolean[how.length];
    for (int i = 0; i < how.length; i++) {
      out[i] = how[i] == 2;
    }
    return out;
  }

  /** "[saxpy]", or "a batch of 32 kernels", for messages about a call. */
  private static String describe(List<KernelSource> requests) {
    if (requests.size() == 1 && requests.get(0) != null) {
      return String.valueOf(requests.get(0).kernelNames());
    }
    return "a batch of " + requests.size() + " requests";
  }
}
