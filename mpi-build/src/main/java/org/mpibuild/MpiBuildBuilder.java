package org.mpibuild;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import org.mpibuild.internal.settings.CoreSettings;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.internal.startup.Startup;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Setting;
import org.mpibuild.spi.SettingSource;

/**
 * Configures an {@link MpiBuild}; from {@link MpiBuild#builder()}. Preset from system properties and
 * environment variables; every setting they can hold can also be set here ({@link #set}), and a value set
 * here wins. A bad value fails at once with a message naming the setting.
 */
public final class MpiBuildBuilder {
  private SettingSource source = SettingSource.ofProcess();
  private Communicator communicator;
  private Backend backend;

  MpiBuildBuilder() {}

  /**
   * Sets any setting by its environment variable's name, as the README's configuration table lists them,
   * for example {@code set("MPI_BUILD_CACHE_MAX_BYTES", "4g")} or {@code set("MPI_BUILD_CUDA_ARCH", "sm_90")}.
   *
   * @param variable the setting's environment variable
   * @param value its value, as the variable would hold it
   * @return this builder
   * @throws IllegalArgumentException if no such setting exists, or the value is bad (the message names both)
   */
  public MpiBuildBuilder set(String variable, String value) {
    for (Setting<?> s : Configuration.all()) {
      if (s.variable().equals(variable)) {
        return set(s, value);
      }
    }
    throw new IllegalArgumentException("'" + variable + "' is not a setting of mpi-build (README: Configuration)");
  }

  private MpiBuildBuilder set(Setting<?> setting, String value) {
    setting.parse(Objects.requireNonNull(value, "value"));
    source = source.with(setting, value);
    return this;
  }

  /**
   * Builds on this communicator instead of the world, for example one from
   * {@code org.mpibuild.mpijava.MpiJava.communicator(comm)}. The caller keeps ownership: {@link MpiBuild#close()}
   * does not close it, and the caller closes it after the instance.
   *
   * @param communicator the communicator
   * @return this builder
   */
  public MpiBuildBuilder communicator(Communicator communicator) {
    this.communicator = Objects.requireNonNull(communicator, "communicator");
    return this;
  }

  /**
   * Never uses MPI: a plain local build, even under mpirun ({@code MPI_BUILD_MODE=local}).
   *
   * @return this builder
   */
  public MpiBuildBuilder local() {
    return set(CoreSettings.MODE, "local");
  }

  /**
   * Chooses the backend by id, for example {@code "opencl"} ({@code MPI_BUILD_BACKEND}).
   *
   * @param id the backend id
   * @return this builder
   */
  public MpiBuildBuilder backend(String id) {
    return set(CoreSettings.BACKEND, Objects.requireNonNull(id, "id"));
  }

  /**
   * Uses this backend instance; {@link MpiBuild#close()} closes it.
   *
   * @param backend an opened backend
   * @return this builder
   */
  public MpiBuildBuilder backend(Backend backend) {
    this.backend = Objects.requireNonNull(backend, "backend");
    return this;
  }

  /**
   * Uses this directory for the persistent kernel cache, turning the cache on if it was off
   * ({@code MPI_BUILD_CACHE_DIR}; default {@code ~/.cache/mpi-build}).
   *
   * @param dir the cache directory
   * @return this builder
   */
  public MpiBuildBuilder cacheDirectory(Path dir) {
    if (CoreSettings.CACHE.read(source) == org.mpibuild.internal.settings.CacheSettings.Access.OFF) {
      set(CoreSettings.CACHE, "on");
    }
    return set(CoreSettings.CACHE_DIR, dir.toAbsolutePath().toString());
  }

  /**
   * Turns the persistent kernel cache off: every build compiles ({@code MPI_BUILD_CACHE=off}).
   *
   * @return this builder
   */
  public MpiBuildBuilder noCache() {
    return set(CoreSettings.CACHE, "off");
  }

  /**
   * Sets how long the root's compile may take (default 10 minutes, {@code MPI_BUILD_COMPILE_TIMEOUT});
   * past it every rank throws {@link BuildTimeoutException}.
   *
   * @param timeout the compile timeout, more than 0 and at most a day
   * @return this builder
   * @throws IllegalArgumentException if out of range
   */
  public MpiBuildBuilder compileTimeout(Duration timeout) {
    return set(CoreSettings.COMPILE_TIMEOUT, Double.toString(timeout.toMillis() / 1000.0));
  }

  /**
   * Sets the broadcast chunk size (default 4 MiB, {@code MPI_BUILD_CHUNK_BYTES}; MPI counts are int).
   *
   * @param bytes the chunk size, 1 to 2^31 - 1
   * @return this builder
   * @throws IllegalArgumentException if out of range
   */
  public MpiBuildBuilder chunkBytes(int bytes) {
    return set(CoreSettings.CHUNK_BYTES, Integer.toString(bytes));
  }

  /**
   * Sets the largest binary a rank accepts (default 16 GiB, {@code MPI_BUILD_MAX_BINARY_BYTES}); larger
   * ones are refused before allocation.
   *
   * @param bytes the limit
   * @return this builder
   * @throws IllegalArgumentException if not positive
   */
  public MpiBuildBuilder maxBinaryBytes(long bytes) {
    return set(CoreSettings.MAX_BINARY_BYTES, Long.toString(bytes));
  }

  /**
   * Sets how many ranks compile the misses of {@link MpiBuild#mpiBuildKernels} and
   * {@link MpiBuild#precompile} ({@code MPI_BUILD_BATCH_RANKS}; default every rank).
   *
   * @param ranks at least 1, or 0 for every rank
   * @return this builder
   * @throws IllegalArgumentException if negative
   */
  public MpiBuildBuilder batchRanks(int ranks) {
    return set(CoreSettings.BATCH_RANKS, Integer.toString(ranks));
  }

  /**
   * Records every kernel request into this manifest file ({@code MPI_BUILD_RECORD}), written by rank 0,
   * for {@code mpi-build precompile}.
   *
   * @param manifest the file, appended to
   * @return this builder
   */
  public MpiBuildBuilder record(Path manifest) {
    return set(CoreSettings.RECORD, manifest.toAbsolutePath().toString());
  }

  /**
   * Opens MPI (or local mode) and the backend on every rank. Collective: if the backend cannot run on
   * some rank, every rank throws, naming the ranks and reasons.
   *
   * @return the instance
   * @throws BackendUnavailableException on every rank, if the backend cannot run on some rank
   */
  public MpiBuild build() {
    Settings settings = Settings.from(source);
    return new MpiBuild(settings, Startup.open(settings, communicator, backend));
  }
}
