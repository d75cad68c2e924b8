package org.mpibuild.internal.settings;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.mpibuild.internal.comm.Backoff;
import org.mpibuild.spi.SettingSource;


/**
 * Configuration from system properties and environment variables, checked once, where each setting is
 * declared ({@link CoreSettings}): this record only holds the values read. A system property wins
 * over the environment variable of the same meaning; a bad value fails with a message naming the setting.
 * The README's configuration table lists every setting.
 *
 * @param mode how to find MPI
 * @param binding which MPI binding to use
 * @param source where the settings were read, for the backends' own settings
 * @param backend the backend id, or null for the only one on the class path
 * @param chunkBytes the broadcast chunk size
 * @param maxBinaryBytes the largest binary a rank accepts
 * @param cache the persistent cache
 * @param compileTimeout how long the root's compile may take before every rank fails with a timeout
 * @param batchRanks how many ranks compile the misses of a batch build; 0 means every rank
 * @param progress who drives the MPI calls of asynchronous builds
 * @param record the manifest file the root appends every build request to, or null
 * @param collectiveTimeout how long a rank waits for the others to enter a collective call; zero: for ever
 */
public record Settings(Mode mode, Binding binding, SettingSource source, String backend, int chunkBytes, long maxBinaryBytes, CacheSettings cache,
    Duration compileTimeout, int batchRanks, Progress progress, Path record,
    Duration collectiveTimeout) {

  /** Who makes the MPI calls of asynchronous builds. */
  public enum Progress {
    /** A library thread under MPI_THREAD_MULTIPLE, else the caller. */
    AUTO,
    /** A library thread; needs MPI_THREAD_MULTIPLE. */
    THREAD,
    /** The caller's thread, when it touches a future or calls progress(). */
    CALLER
  }

  /** Which MPI binding to use. */
  public enum Binding {
    /** mpi.jar when the program initialized MPI through it, else FFM where it runs, else mpi.jar. */
    AUTO,
    /** Open MPI's Java bindings. */
    MPIJAVA,
    /** The MPI C library through Java's Foreign Function and Memory API (Java 22+). */
    FFM
  }

  /** How to find MPI. */
  public enum Mode {
    /** MPI when the process was started by an MPI launcher or the program initialized MPI; else local. */
    AUTO,
    /** Never use MPI: a plain local build. */
    LOCAL,
    /** Require MPI; fail if it cannot be used. */
    MPI
  }

  public static final int DEFAULT_CHUNK_BYTES = 4 << 20;
  public static final long DEFAULT_MAX_BINARY_BYTES = 16L << 30;
  public static final Duration DEFAULT_COMPILE_TIMEOUT = Duration.ofMinutes(10);
  public static final Duration DEFAULT_COLLECTIVE_TIMEOUT = Duration.ofMinutes(10);

  /** Reads the settings of this process. */
  public static Settings fromEnvironment() {
    return from(SettingSource.ofProcess());
  }

  /** Reads the settings from {@code s}; a bad value fails, naming the setting. */
  public static Settings from(SettingSource s) {
    String backend = CoreSettings.BACKEND.read(s);
    return new Settings(CoreSettings.MODE.read(s), CoreSettings.BINDING.read(s), s,
        backend == null || backend.isEmpty() ? null : backend, CoreSettings.CHUNK_BYTES.read(s).intValue(),
        CoreSettings.MAX_BINARY_BYTES.read(s), CacheSettings.from(s), CoreSettings.COMPILE_TIMEOUT.read(s),
        CoreSettings.BATCH_RANKS.read(s), CoreSettings.PROGRESS.read(s), CoreSettings.RECORD.read(s),
        CoreSettings.COLLECTIVE_TIMEOUT.read(s));
  }

  /** How this rank waits for MPI ({@code MPI_BUILD_SPIN_US}). */
  public Backoff waiting() {
    return new Backoff(TimeUnit.MICROSECONDS.toNanos(CoreSettings.SPIN_MICROS.read(source)));
  }
}
