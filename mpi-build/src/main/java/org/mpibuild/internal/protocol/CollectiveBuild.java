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
import org.mpibuild.internal.agreement.Verdict;
import org.mpibuild.internal.cache.Caches;
import org.mpibuild.internal.cache.KernelCache;
import org.mpibuild.internal.comm.Backoff;
import org.mpibuild.internal.manifest.ManifestWriter;
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
  }

  /**
   * The same protocol, its communicators (the job's and, when the job is split by target, this rank's
   * group's) each carried by {@code wrap}'s wrapper over the same ranks (for asynchronous builds).
   */
  public CollectiveBuild over(UnaryOperator<Communicator> wrap) {
    return new CollectiveBuild(wrap.apply(comm), backend, settings, caches, counters, targets.over(wrap), recorder);
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
    try (RootWorker work = new RootWorker(source, rank, targets.buildTargets(), settings.compileTimeout(), requests, owners,
        order, dist.rank(), load)) {
      return distribute(requests, owners, order, load, listener, batch, work, t0, t1, fileOps0);
    }
  }

  private List<Entry> distribute(List<KernelSource> requests, int[] owners, int[] order, boolean load,
      Consumer<Entry> listener, boolean batch, RootWorker work, long t0, long t1, long fileOps0) {
    final int rank = comm.rank();
    final Communicator dist = targets.distribution(comm);
    int k = requests.size();
    Envelope[] envelopes = new Envelope[k];
    BinarySource.Obtained[] obtained = new BinarySource.Obtained[k];
    String[] problems = new String[k];
    long[] waitNanos = new long[k];
    long[] broadcastNanos = new long[k];
    for (int i : order) {
      boolean owner = dist.rank() == owners[i];
      long b0 = System.nanoTime();
      Envelope sent = null;
      if (owner) {
        obtained[i] = work.get(i);
        sent = obtained[i].envelope();
        counters.rootOutcome(obtained[i].compiled(), obtained[i].cacheHit(), caches.enabled());
      }
      long b1 = System.nanoTime();
      EnvelopeBroadcast.Received received;
      try {
        received = broadcaster.broadcast(dist, sent, owners[i], load); // a loaded binary's kernel releases it
      } finally {
        if (owner) {
          obtained[i].afterBroadcast().run();
        }
      }
      long b2 = System.nanoTime();
      if (owner) {
        envelopes[i] = sent;
      } else if (received.header().status() != Envelope.Status.OK) {
        envelopes[i] = Envelope.failure(received.header().status(), received.metadata() != null ? received.metadata()
            : new Envelope.Metadata(backend.id(), "", List.of(), "", "", "the build failed on rank "
                + targets.jobRank(owners[i]) + " and its error report arrived corrupt on this rank", ""));
      } else {
        envelopes[i] = received.envelope(); // null if it arrived corrupt; problems[i] says why
        problems[i] = received.problem();
      }
      waitNanos[i] = owner ? 0 : received.headerNanos() - b1;
      broadcastNanos[i] = b2 - b1 - waitNanos[i];
      if (listener != null) {
        Envelope arrived = envelopes[i] != null ? envelopes[i] : Envelope.failure(Envelope.Status.INTERNAL_ERROR,
            new Envelope.Metadata(backend.id(), "", List.of(), "", "", problems[i], ""));
        listener.accept(new Entry(i, requests.get(i), arrived, null, new BuildStats(rank, targets.jobRank(owners[i]),
            owner && obtained[i].compiled(), owner && obtained[i].cacheHit(), 0, 0, 0, 0, 0, arrived.payload().length(), 0)));
      }
    }

    // Build failures are known to every rank of a group. Without groups a single build throws now.
    RankFailure localFailure = null;
    for (int i = 0; i < k; i++) {
      if (envelopes[i] != null && envelopes[i].status() != Envelope.Status.OK) {
        if (!batch && !targets.grouped()) {
          throw RankFailure.exceptionFor(envelopes[i].status(), envelopes[i].metadata(), targets.jobRank(owners[i]));
        }
        if (targets.grouped() && localFailure == null) {
          localFailure = RankFailure.build(envelopes[i], BatchPlan.describeRequest(i, k, requests.get(i)),
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
        programs[i] = obtained[i].program();
        if (load && programs[i] == null) {
          failure = "this rank compiled for [" + envelopes[i].metadata().target()
              + "] but cannot load it: its device is [" + backend.target() + "]";
        }
      } else if (load) {
        try {
          programs[i] = ProgramLoader.loadChecked(backend, envelopes[i]);
        } catch (RuntimeException | LinkageError e) {
          failure = RankFailure.describe(e);
          log.debug("load failed", e);
        }
      }
      if (!load && programs[i] != null) {
        programs[i].close();
        programs[i] = null;
      }
      loadNanos[i] = System.nanoTime() - l0;
      if (failure != null) {
        String what = BatchPlan.describeRequest(i, k, requests.get(i));
        localFailure = RankFailure.problem(batch ? (what.isEmpty() ? "the request" : what) + ": " + failure : failure);
      }
    }
    ProgramLoader.agreeOnLoad(comm, programs, localFailure);
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
          owner && obtained[i].compiled(), owner && obtained[i].cacheHit(), t1 - t0,
          owner ? obtained[i].nanos() : 0, waitNanos[i], broadcastNanos[i], loadNanos[i],
          envelopes[i].payload().length(), i == 0 ? fileOps : 0);
      if (envelopes[i].status() == Envelope.Status.OK) {
        counters.add(stats, owner && dist.size() > 1 ? envelopes[i].payload().length() : 0);
      }
      entries.add(new Entry(i, requests.get(i), envelopes[i], programs[i], stats));
      log.debug("built {} from rank {}: {} bytes, compile {} ms, broadcast {} ms, load {} ms",
          envelopes[i].metadata().kernelNames(), stats.root(), stats.binaryBytes(), ms(stats.obtainNanos()),
          ms(stats.broadcastNanos()), ms(stats.loadNanos()));
    }
    log.debug("{} request(s) in {} ms", k, ms(t4 - t0));
    return entries;
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
