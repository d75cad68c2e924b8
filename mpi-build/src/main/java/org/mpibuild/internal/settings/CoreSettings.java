package org.mpibuild.internal.settings;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.mpibuild.internal.comm.Backoff;
import org.mpibuild.spi.Setting;

/** The core's settings, each declared once; {@link Settings} and {@link CacheSettings} read them. */
public final class CoreSettings {
  private CoreSettings() {}

  private static final Duration DAY = Duration.ofDays(1);
  private static final Duration YEAR = Duration.ofDays(366);

  public static final Setting<Settings.Binding> BINDING = Setting.choice("MPI_BUILD_BINDING", "mpibuild.binding",
      Settings.Binding.class, Settings.Binding.AUTO, "how to reach MPI: `auto`, `mpijava` or `ffm` (see \"Three ways "
      + "to reach MPI\")");
  public static final Setting<Settings.Mode> MODE = Setting.choice("MPI_BUILD_MODE", "mpibuild.mode",
      Settings.Mode.class, Settings.Mode.AUTO, "`auto`: MPI when launched by mpirun or when the program initialized "
      + "MPI, else local (launched with several ranks and no MPI binding, it fails); `local`: never MPI, each rank "
      + "builds alone; `mpi`: require MPI");
  public static final Setting<String> BACKEND = Setting.text("MPI_BUILD_BACKEND", "mpibuild.backend", null,
      "CUDA if a GPU is usable, else OpenCL", "backend id, `cuda` or `opencl`");
  public static final Setting<Long> CHUNK_BYTES = Setting.bytes("MPI_BUILD_CHUNK_BYTES", "mpibuild.chunkBytes",
      Settings.DEFAULT_CHUNK_BYTES, 1, Integer.MAX_VALUE, "`4m`", "size of the broadcast's pieces: receivers check each piece while the next arrives");
  public static final Setting<Long> MAX_BINARY_BYTES = Setting.bytes("MPI_BUILD_MAX_BINARY_BYTES",
      "mpibuild.maxBinaryBytes", Settings.DEFAULT_MAX_BINARY_BYTES, 1, 1L << 40, "`16g`",
      "largest binary a rank accepts; checked before allocating");
  public static final Setting<Duration> COMPILE_TIMEOUT = Setting.seconds("MPI_BUILD_COMPILE_TIMEOUT",
      "mpibuild.compileTimeoutSeconds", Settings.DEFAULT_COMPILE_TIMEOUT, Duration.ofMillis(1), DAY, "`600`",
      "seconds the root's compile may take (more than 0, at most a day)");
  public static final Setting<Duration> COLLECTIVE_TIMEOUT = Setting.deadline("MPI_BUILD_COLLECTIVE_TIMEOUT",
      "mpibuild.collectiveTimeoutSeconds", Settings.DEFAULT_COLLECTIVE_TIMEOUT, Duration.ofDays(7), "`600`",
      "seconds a rank waits for the others to enter a collective call, blocking or asynchronous; past it, the job "
      + "is aborted naming the ranks that never came; `off` waits for ever; equal on every rank (agreed at opening)");
  public static final Setting<Integer> SPIN_MICROS = Setting.count("MPI_BUILD_SPIN_US", "mpibuild.spinMicros",
      Backoff.DEFAULT_SPIN_MICROS, 0, 1_000_000, "`1000`", "microseconds a waiting rank polls MPI before it sleeps "
      + "(sleeps then grow to 1 ms); more lowers a broadcast's latency, but a polling rank takes a core from the "
      + "compiles on an oversubscribed node");
  public static final Setting<Integer> BATCH_RANKS = Setting.count("MPI_BUILD_BATCH_RANKS", "mpibuild.batchRanks",
      0, 0, 1 << 24, "`0` (every rank)", "how many ranks compile the misses of a batch build");
  public static final Setting<Integer> COMPILE_SHARE = Setting.count("MPI_BUILD_COMPILE_SHARE",
      "mpibuild.compileShare", 0, 0, 1 << 16, "`0` (auto)", "how many ranks share a compile that the others would "
      + "wait for (a backend that can split it: PoCL with launch shapes named); each pays the compiler's start-up, "
      + "so it pays only where each rank has a core: `0` is 2 unless the node has more ranks than cores, then 1; "
      + "`1`: the root compiles alone");
  public static final Setting<Integer> COMPILE_AHEAD = Setting.count("MPI_BUILD_COMPILE_AHEAD",
      "mpibuild.compileAhead", 1, 0, 1, "`1` (on)", "whether the ranks likely to compile (rank 0 and the ranks that "
      + "share its compiles, in a job of several ranks, on a node with a core per rank) have the backend prepare a "
      + "compile ahead (PoCL: a compile process warmed up at the idle priority, one per such rank, about 100 MB, "
      + "started again after each compile it serves), which takes the compiler's start-up off a cold compile's "
      + "path; `0`: none");
  public static final Setting<Settings.Progress> PROGRESS = Setting.choice("MPI_BUILD_PROGRESS", "mpibuild.progress",
      Settings.Progress.class, Settings.Progress.AUTO, "who makes the MPI calls of async builds: `auto` (a library "
      + "thread under `MPI_THREAD_MULTIPLE`, else the caller), `thread`, `caller`");
  public static final Setting<Path> RECORD = Setting.path("MPI_BUILD_RECORD", "mpibuild.record", "none",
      "manifest file that rank 0 appends every kernel request to, for `precompile`");

  public static final Setting<CacheSettings.Access> CACHE = Setting.choice("MPI_BUILD_CACHE", "mpibuild.cache",
      CacheSettings.Access.class, CacheSettings.Access.ON, Map.of("true", CacheSettings.Access.ON, "1",
          CacheSettings.Access.ON, "read-write", CacheSettings.Access.ON, "false", CacheSettings.Access.OFF, "0",
          CacheSettings.Access.OFF, "none", CacheSettings.Access.OFF, "readonly", CacheSettings.Access.READ_ONLY,
          "ro", CacheSettings.Access.READ_ONLY), "`on`, `read-only` or `off`");
  public static final Setting<Path> CACHE_DIR = Setting.path("MPI_BUILD_CACHE_DIR", "mpibuild.cache.dir",
      "`~/.cache/mpi-build`", "the shared cache directory");
  public static final Setting<Long> CACHE_MAX_BYTES = Setting.bytes("MPI_BUILD_CACHE_MAX_BYTES",
      "mpibuild.cache.maxBytes", CacheSettings.DEFAULT_MAX_BYTES, 1, 1L << 50, "`2g`", "size kept by LRU eviction");
  public static final Setting<Boolean> CACHE_SHARED = Setting.flag("MPI_BUILD_CACHE_SHARED", "mpibuild.cache.shared",
      false, "allow a group-writable or foreign-owned directory");
  public static final Setting<Duration> CACHE_LOCK_STALE = Setting.seconds("MPI_BUILD_CACHE_LOCK_STALE",
      "mpibuild.cache.lockStaleSeconds", Duration.ofSeconds(60), Duration.ofMillis(1), DAY, "`60`",
      "seconds before an unrefreshed lock from another host is taken over (more than 0)");
  public static final Setting<Duration> CACHE_LOCK_WAIT = Setting.seconds("MPI_BUILD_CACHE_LOCK_WAIT",
      "mpibuild.cache.lockWaitSeconds", Duration.ofMinutes(10), DAY, "`600`",
      "seconds to wait for another job's compile before compiling anyway");
  public static final Setting<Duration> CACHE_NEGATIVE_TTL = Setting.seconds("MPI_BUILD_CACHE_NEGATIVE_TTL",
      "mpibuild.cache.negativeTtlSeconds", Duration.ZERO, YEAR, "`0` (off)", "seconds a compile failure is remembered");
  public static final Setting<Path> NODE_CACHE_DIR = Setting.path("MPI_BUILD_NODE_CACHE_DIR", "mpibuild.cache.nodeDir",
      "none", "node-local cache directory");

  public static final Setting<Path> SIGNING_KEY = Setting.path("MPI_BUILD_SIGNING_KEY", "mpibuild.cache.signingKey",
      "`~/.config/mpi-build/signing-key`", "your private key that signs the cache entries you write (created, mode "
      + "600, on first use); entries are loaded only when signed by it or by a key in your `MPI_BUILD_TRUSTED_KEYS`");
  public static final Setting<Path> TRUSTED_KEYS = Setting.path("MPI_BUILD_TRUSTED_KEYS", "mpibuild.cache.trustedKeys",
      "`~/.config/mpi-build/trusted-keys`", "the other public keys whose cache entries you load (a group's, "
      + "say): one base64 key per line, `#` comments; read only if it is a regular file of yours that nobody else "
      + "can write; `mpi-build cache trust FILE` adds keys. A cache directory's own files are never a source of trust");

  /**
   * Names that look like settings but are not the library's, on purpose: read by the launch scripts
   * ({@code bin/mpi-build}, {@code bin/mpi-build-rank}), provisioning, the examples, the benchmarks or the
   * tests, never by the library; and the environment slot {@code bin/mpi-build-rank} starts each rank with, which
   * the OpenCL backend writes PoCL's variables into. Never reported as misspelt ({@link SettingNames}).
   */
  public static final Set<String> NOT_SETTINGS = Set.of("MPI_BUILD_HOME", "MPI_BUILD_JAVA", "MPI_BUILD_JAVA_OPTS",
      "MPI_BUILD_MPI_JAR", "MPI_BUILD_MPIRUN", "MPI_BUILD_OMPI_LIBDIR", "MPI_BUILD_FFM_JDK", "MPI_BUILD_LOG_LEVEL",
      "MPI_BUILD_POCL_CACHE_ROOT", "MPI_BUILD_STATS_JSON", "MPI_BUILD_GPG_KEY", "MPI_BUILD_BASE_IMAGE",
      "MPI_BUILD_ENVIRONMENT_SLOT");

  /** Prefixes of such names: provisioning's switches, the benchmarks' and the integration tests' own. */
  public static final List<String> NOT_SETTING_PREFIXES = List.of("MPI_BUILD_PROVISION_", "MPI_BUILD_BENCH_",
      "mpibuild.it.");

  /**
   * The settings of the project's own plug-ins (backends and MPI bindings), variables and properties: real
   * settings even where that plug-in is not on the class path, so never reported as misspelt. A test keeps
   * it equal to what the plug-ins declare.
   */
  public static final Set<String> PLUGIN_SETTINGS = Set.of("MPI_BUILD_MPI_LIBRARY", "MPI_BUILD_MPI_ABI",
      "MPI_BUILD_CUDA_ARCH", "mpibuild.cuda.arch", "MPI_BUILD_CUDA_COMPILERS", "mpibuild.cuda.compilers",
      "MPI_BUILD_NVCC", "mpibuild.cuda.nvcc", "MPI_BUILD_CUDA_DEVICE", "mpibuild.cuda.device",
      "MPI_BUILD_OPENCL_PLATFORM", "mpibuild.opencl.platform", "MPI_BUILD_OPENCL_DEVICE", "mpibuild.opencl.device",
      "MPI_BUILD_OPENCL_ON_QUEUE", "mpibuild.opencl.onQueue", "MPI_BUILD_OPENCL_COMPILE_IN_PROCESS",
      "mpibuild.opencl.compileInProcess");

  /** Every core setting, in the README's order. */
  public static final List<Setting<?>> ALL = List.of(BINDING, MODE, BACKEND, CHUNK_BYTES, MAX_BINARY_BYTES, CACHE,
      CACHE_DIR, CACHE_MAX_BYTES, CACHE_SHARED, CACHE_LOCK_STALE, CACHE_LOCK_WAIT, CACHE_NEGATIVE_TTL,
      NODE_CACHE_DIR, SIGNING_KEY, TRUSTED_KEYS, COMPILE_TIMEOUT, COLLECTIVE_TIMEOUT, SPIN_MICROS, BATCH_RANKS, COMPILE_SHARE, COMPILE_AHEAD, PROGRESS,
      RECORD);
}
