package org.mpibuild;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.mpibuild.internal.agreement.CallingThread;
import org.mpibuild.internal.comm.LocalCommunicator;
import org.mpibuild.internal.comm.LogContext;
import org.mpibuild.internal.manifest.ManifestWriter;
import org.mpibuild.internal.protocol.AsyncBuilds;
import org.mpibuild.internal.protocol.CollectiveBuild;
import org.mpibuild.internal.protocol.JobCounters;
import org.mpibuild.internal.protocol.Outcome;
import org.mpibuild.internal.protocol.ProgramLoader;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.internal.startup.NodeCores;
import org.mpibuild.internal.startup.Startup;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.UseGuard;

/**
 * Builds kernels once per job instead of once per rank: the root compiles, broadcasts the binary, and
 * every rank loads it.
 *
 * <pre>{@code
 * try (MpiBuild mpiBuild = MpiBuild.create()) {
 *   Kernel kernel = mpiBuild.mpiBuildKernel(source, 0);
 *   cl_kernel saxpy = kernel.as(OpenClKernel.class).kernel("saxpy");
 * }
 * }</pre>
 *
 * <p><b>MPI.</b> By default the world communicator is used when the program was started by an MPI
 * launcher ({@code mpirun}) or has initialized MPI itself; otherwise the build is local, and the same
 * calls work unchanged. An MPI that the program initialized is never finalized by the library. If the
 * library initialized MPI (the program was started by mpirun but did not call {@code MPI.Init}), it
 * finalizes it when the JVM exits.
 *
 * <p><b>Collective calls.</b> {@link #create()}, {@link MpiBuildBuilder#build()}, {@link #mpiBuildKernel} and
 * {@link #close()} are collective: every rank of the communicator calls them in the same order. They are
 * all-or-nothing: every rank returns, or every rank throws the same exception.
 *
 * <p><b>One thread at a time.</b> An instance is used by one thread at a time. A call made while another
 * thread is inside a call of the same instance (a build, a batch, {@link #statistics()}, {@link #close()},
 * ...) throws {@code IllegalStateException} at once, naming that thread and its call, and leaves that call
 * untouched. The library's own threads (asynchronous builds, progress) do not count. For builds from
 * several threads, give each thread an instance of its own with a communicator of its own.
 *
 * <p><b>After close.</b> {@link #close()} first closes the kernels this instance made and is still holding
 * (their device objects are released), then the backend and its device context and queue. From then on,
 * every call of this instance, and every call of its kernels and of their backend views that would hand out a
 * device handle ({@code OpenClKernel.queue()}, {@code kernel(name)}, {@code CudaKernel.launch}, ...), and
 * every stream-ordered messenger bound to its queue, throws {@code IllegalStateException} naming what was
 * closed and why, for example "kernel saxpy: its MpiBuild was closed". A released handle is never handed
 * out; a handle obtained before close must not be used after it.
 */
public final class MpiBuild implements AutoCloseable {
  private final Startup opened;
  private final Communicator comm;
  private final Backend backend;
  private final Settings settings;
  private final JobCounters counters = new JobCounters();
  private final CollectiveBuild protocol;
  private final AsyncBuilds.Lazy async;
  /** The kernels this instance made and that are not closed yet: closed before the backend. */
  private final UseGuard kernels = new UseGuard("this MpiBuild");
  /** Who is inside a call of this instance, if anyone. */
  /** The one program thread served at a time. */
  private final CallingThread caller = new CallingThread();
  private volatile BuildStats lastStats;
  private volatile boolean closed;

  MpiBuild(Settings settings, Startup opened) {
    this.opened = opened;
    this.comm = opened.comm();
    this.backend = opened.backend();
    this.settings = settings;
    ManifestWriter.Recorder recorder = settings.record() != null && comm.rank() == 0
        ? new ManifestWriter.Recorder(settings.record()) : null;
    this.protocol = new CollectiveBuild(comm, backend, settings, opened.caches(), counters, opened.targets(), recorder)
        .onNode(opened.nodeRanks(), NodeCores.online());
    this.async = new AsyncBuilds.Lazy(protocol, comm, settings.progress());
  }

  /**
   * Creates an instance from the environment: MPI if launched by mpirun, else local; the only backend on
   * the class path (or {@code MPI_BUILD_BACKEND}). Collective.
   *
   * @return the instance
   * @throws BackendUnavailableException on every rank, if the backend cannot run on some rank
   */
  public static MpiBuild create() {
    return builder().build();
  }

  /**
   * Returns a builder, preset from system properties and environment variables.
   *
   * @return a new builder
   */
  public static MpiBuildBuilder builder() {
    return new MpiBuildBuilder();
  }

  /**
   * Builds the only kernel of {@code source} collectively; see {@link #mpiBuildKernel(KernelSource, int)}.
   *
   * @param source kernel source text
   * @param root the rank that compiles
   * @return this rank's kernel
   */
  public Kernel mpiBuildKernel(String source, int root) {
    return mpiBuildKernel(KernelSource.of(source), root);
  }

  /**
   * Builds a kernel collectively: the root compiles, broadcasts the binary, every rank loads it.
   * Every rank must pass an equal request and the same root.
   *
   * @param request what to build
   * @param root the rank that compiles, in {@code 0..size()-1}
   * @return this rank's kernel, ready to launch
   * @throws IllegalArgumentException on every rank, if the root is out of range or the request is
   *     invalid (empty source, bad kernel name, unknown kernel, invalid option); the message names the value
   * @throws RequestMismatchException on every rank, if ranks passed different requests or roots
   * @throws CompileException on every rank, with the build log, if the compiler rejected the source
   * @throws KernelLoadException on every rank, if some rank could not load the binary
   */
  public Kernel mpiBuildKernel(KernelSource request, int root) {
    return call("mpiBuildKernel", true, () -> {
      Outcome o = protocol.run(request, root);
      lastStats = o.stats();
      return new BuiltKernel(o.program(), o.envelope(), o.stats(), kernels, this::completeEnvelope);
    });
  }

  /**
   * Builds a binary collectively without loading it: the root compiles (or finds it in the cache) and every
   * rank receives the checked binary. Works on ranks without a device, for example to build CUDA binaries
   * for architectures named with {@code MPI_BUILD_CUDA_ARCH} on nodes without a GPU, or to fill the cache.
   *
   * @param request what to build
   * @param root the rank that compiles
   * @return the binary data, on every rank
   * @throws KernelBuildException on every rank, as {@link #mpiBuildKernel(KernelSource, int)} does
   */
  public BinaryData mpiBuildBinary(KernelSource request, int root) {
    return call("mpiBuildBinary", true, () -> {
      Outcome o = protocol.run(request, root, false);
      lastStats = o.stats();
      return new BinaryData(o.envelope());
    });
  }

  /**
   * Starts building a kernel collectively and returns at once; see
   * {@link #mpiBuildKernelAsync(KernelSource, int)}.
   *
   * @param source kernel source text
   * @param root the rank that compiles
   * @return the future kernel
   */
  public KernelFuture mpiBuildKernelAsync(String source, int root) {
    return mpiBuildKernelAsync(KernelSource.of(source), root);
  }

  /**
   * Starts building a kernel collectively and returns at once with its future. Once the ranks agree, the
   * root compiles on a worker thread; the binary travels by non-blocking broadcasts ({@code MPI_Ibcast}).
   * Every rank starts the same builds in the same order; several may be in flight, and their futures may
   * be completed in any order. A blocking call of this instance ({@link #mpiBuildKernel},
   * {@link #statistics()}, {@link #close()}) first waits for every build started before it.
   *
   * <p><b>Thread levels.</b> Under {@code MPI_THREAD_MULTIPLE} (and without MPI) a library thread makes
   * the MPI calls and builds complete on their own. Under {@code SINGLE}, {@code FUNNELED} and
   * {@code SERIALIZED}, every MPI call stays on the caller's thread: the builds move on when the caller
   * touches a future ({@link KernelFuture#test()}, {@link KernelFuture#join()}) or calls
   * {@link #progress()}. {@code MPI_BUILD_PROGRESS=thread|caller} overrides the choice.
   *
   * @param request what to build
   * @param root the rank that compiles
   * @return the future kernel; it fails with what {@link #mpiBuildKernel(KernelSource, int)} would throw
   * @throws IllegalStateException if {@code MPI_BUILD_PROGRESS=thread} but MPI is not MULTIPLE
   */
  public KernelFuture mpiBuildKernelAsync(KernelSource request, int root) {
    return call("mpiBuildKernelAsync", false, () -> {
      AsyncBuilds builds = async.get();
      int rank = comm.rank();
      String thread = Thread.currentThread().getName();
      return new KernelFuture(builds.submit(p -> {
        Outcome o;
        try (CallingThread.Scope marked = CallingThread.runFor(thread)) {
          o = p.run(request, root);
        }
        lastStats = o.stats();
        return (Kernel) new BuiltKernel(o.program(), o.envelope(), o.stats(), kernels, this::completeEnvelope);
      }, rank), builds);
    });
  }

  /**
   * Makes progress on asynchronous builds without blocking. Needed only when MPI is below
   * {@code MPI_THREAD_MULTIPLE} and the program wants its builds to move on between touches of their
   * futures; harmless otherwise. Not collective.
   */
  public void progress() {
    try (CallingThread.Scope ignored = caller.enter("MpiBuild", "progress")) {
      async.ifStarted(AsyncBuilds::progress);
    }
  }

  /**
   * Returns who makes the MPI calls of asynchronous builds: {@code "thread"} (a library thread) or
   * {@code "caller"} (the program's thread, in {@link #progress()} and the futures).
   *
   * @return the progress mode
   */
  public String asyncProgress() {
    return async.get().mode().name().toLowerCase(Locale.ROOT);
  }

  /**
   * Builds many kernels collectively, the compiles spread over the ranks: each request that misses the
   * cache is compiled on one rank, at most one compile per rank at a time, balanced by expected cost
   * (source size), on at most {@code MPI_BUILD_BATCH_RANKS} ranks (default: every rank); every rank then
   * receives and loads every binary. Every rank passes an equal list. When the ranks have different
   * targets, each target group builds and receives its own binaries.
   *
   * @param requests what to build, equal on every rank
   * @return this rank's kernels, in the order of the requests
   * @throws IllegalArgumentException on every rank, naming the first invalid request
   * @throws RequestMismatchException on every rank, if ranks passed different lists
   * @throws KernelBuildException on every rank, for the first request (in list order) that failed to
   *     build, as {@link #mpiBuildKernel(KernelSource, int)} would throw it; no kernel is kept
   * @throws KernelLoadException on every rank, if some rank could not load some binary
   */
  public List<Kernel> mpiBuildKernels(List<KernelSource> requests) {
    return call("mpiBuildKernels", true, () -> {
      List<CollectiveBuild.Entry> entries = protocol.runBatch(requests, true, null);
      RuntimeException failure = CollectiveBuild.firstFailure(entries);
      if (failure != null) {
        throw failure;
      }
      List<Kernel> out = new ArrayList<>(entries.size());
      for (CollectiveBuild.Entry e : entries) {
        out.add(new BuiltKernel(e.program(), e.envelope(), e.stats(), kernels, this::completeEnvelope));
        lastStats = e.stats();
      }
      return out;
    });
  }

  /**
   * Builds every request into the cache without loading anything, the compiles spread over the ranks as
   * in {@link #mpiBuildKernels}. Failed requests do not stop the others: each one's result says what
   * happened. This is what {@code mpi-build precompile} runs. Collective.
   *
   * @param requests what to build, equal on every rank
   * @param listener told on every rank as each binary arrives, in arrival order; may be null
   * @return one result per request, in the order of the requests, the same on every rank
   * @throws RequestMismatchException on every rank, if ranks passed different lists
   */
  public List<PrecompileResult> precompile(List<KernelSource> requests,
      Consumer<PrecompileResult> listener) {
    return call("precompile", true, () -> {
      List<CollectiveBuild.Entry> entries = protocol.runBatch(requests, false,
          listener == null ? null : e -> listener.accept(PrecompileResult.of(e, null)));
      boolean[] cached = protocol.cached(entries);
      List<PrecompileResult> out = new ArrayList<>();
      for (int i = 0; i < entries.size(); i++) {
        out.add(PrecompileResult.of(entries.get(i), cached[i] ? PrecompileResult.Outcome.CACHED
            : PrecompileResult.Outcome.COMPILED));
      }
      return out;
    });
  }

  /**
   * Loads a kernel from binary data on this rank only (not collective). The data is checked first.
   *
   * @param data binary data from {@link Kernel#binaryData()} or {@link BinaryData#fromBytes(byte[])}
   * @return the kernel
   * @throws KernelLoadException if the data is for another backend or target, or the device refuses it
   */
  public Kernel buildKernelFromBinaryData(BinaryData data) {
    if (data == null) {
      throw new NullPointerException("data is null");
    }
    return call("buildKernelFromBinaryData", false, () -> {
      Outcome o = ProgramLoader.loadOnThisRank(backend, comm.rank(), data.envelope());
      return new BuiltKernel(o.program(), o.envelope(), o.stats(), kernels);
    });
  }

  /**
   * Returns what the whole job did across this instance's builds: compiles, cache hits and misses, bytes
   * broadcast, cache file operations and time per phase, reduced over every rank. Collective.
   *
   * @return the job-wide statistics, on every rank
   */
  public JobStatistics statistics() {
    return call("statistics", true, () -> counters.reduce(comm, settings.collectiveTimeout(), settings.waiting(),
        opened.caches().untrustedEntries(), opened.caches().trustCheckNanos()));
  }

  /**
   * Returns what this rank did in the last successful build of this instance, kernel or binary.
   *
   * @return the statistics, or null before the first build
   */
  public BuildStats lastStats() {
    return lastStats;
  }

  /** @return this process's rank in the build communicator; 0 in local mode */
  public int rank() {
    return comm.rank();
  }

  /** @return the number of ranks in the build communicator; 1 in local mode */
  public int size() {
    return comm.size();
  }

  /** @return the id of the backend in use, for example {@code "opencl"} */
  public String backend() {
    return backend.id();
  }

  /** @return the identity of this rank's device */
  public String target() {
    return backend.target();
  }

  /**
   * Returns the distinct targets of the job's ranks, in order of the lowest rank that has each. With more
   * than one, and a backend that builds per target, every build compiles once per target, in parallel.
   *
   * @return the distinct targets
   */
  public List<String> jobTargets() {
    return opened.targets().distinct();
  }

  /** @return the persistent cache's directory, or empty when the cache is off */
  public Optional<Path> cacheDirectory() {
    return settings.cache().enabled() ? Optional.of(settings.cache().dir()) : Optional.empty();
  }

  /**
   * Returns how this instance talks to MPI: the binding's description of the communicator (its
   * {@code toString()}, for logs: binding, communicator and size, or local), this rank, the size, and whether
   * the builds are local.
   *
   * @return how this instance talks to MPI
   */
  public CommunicatorInfo communicator() {
    return new CommunicatorInfo(comm.description(), comm.rank(), comm.size(), comm instanceof LocalCommunicator);
  }

  /**
   * Closes the kernels of this instance that are still open, then releases the backend (its device context
   * and queue) and the library's duplicate communicator. Never finalizes MPI. Collective. Waits first for
   * the asynchronous builds started before it, and, in a job of one rank, for the binaries still being
   * made for the cache after their kernels were ready (at most the compile timeout). Closing twice does
   * nothing.
   *
   * <p>Afterwards every call of this instance throws {@code IllegalStateException}, and so does every call
   * of its kernels that would hand out a device handle, naming the kernel and saying that its MpiBuild was
   * closed (see the class comment). Handles obtained before must not be used after it.
   *
   * @throws IllegalStateException if another thread is inside a call of this instance (nothing is closed)
   */
  @Override
  public void close() {
    try (CallingThread.Scope ignored = caller.enter("MpiBuild", "close"); LogContext ignored2 = LogContext.rank(comm.rank())) {
      if (closed) {
        return;
      }
      async.ifStarted(AsyncBuilds::close);
      closed = true;
      try {
        // first the kernels (before the context and queue they belong to): a binary made when wanted is made
        // from a program at its close; then a job of one rank may still be writing such a binary into the cache
        try {
          kernels.close("its MpiBuild was closed");
        } finally {
          opened.caches().awaitFills(settings.compileTimeout().plusSeconds(10));
        }
      } finally {
        opened.close();
      }
    }
  }

  /**
   * The complete envelope of a kernel built alone, whose binary came after it ({@link Envelope#pending}): waited
   * for, or made, as a call of this instance, so that close cannot release the backend meanwhile.
   */
  private Envelope completeEnvelope(Envelope e) {
    return e.isPending() ? call("binaryData", false, e::complete) : e;
  }

  /**
   * Runs a call of the API: one thread at a time, on an open instance, with the rank in the log context,
   * after the asynchronous builds started before it when {@code drain}.
   */
  private <T> T call(String name, boolean drain, Supplier<T> body) {
    try (CallingThread.Scope ignored = caller.enter("MpiBuild", name)) {
      if (closed) {
        throw new IllegalStateException("MpiBuild." + name + ": this MpiBuild was closed");
      }
      try (LogContext ignored2 = LogContext.rank(comm.rank())) {
        if (drain) {
          async.ifStarted(AsyncBuilds::drain);
        }
        return body.get();
      }
    }
  }
}
