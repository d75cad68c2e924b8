package org.mpibuild.opencl;

import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A build that PoCL fails without a compiler diagnostic. PoCL's kernel cache ({@code POCL_CACHE_DIR}, else
 * {@code ~/.cache/pocl}) is shared by every process of a user without locks (PoCL #430, #1480): while another
 * process writes the same entry, PoCL may fail a build with {@code CL_BUILD_PROGRAM_FAILURE} and a log that
 * holds no error of the compiler's ("Device cpu failed to build the program"). Such a build is tried again, after
 * a short random pause, at most {@link #ATTEMPTS} times in all; a source with an error is never tried twice (its
 * log names the error). What still fails says what to do.
 */
final class PoclCacheRace {
  private static final Logger log = LoggerFactory.getLogger(PoclCacheRace.class);
  /** Builds of one program at most, the first included. */
  static final int ATTEMPTS = 3;

  private PoclCacheRace() {}

  /** Whether a build that failed with {@code buildFailure} and {@code log} on PoCL is tried again. */
  static boolean retry(boolean pocl, boolean buildFailure, String log, int attempt) {
    return pocl && buildFailure && attempt < ATTEMPTS && !hasDiagnostic(log);
  }

  /** Whether the build log names an error of the compiler's (clang writes "error:" for each). */
  static boolean hasDiagnostic(String log) {
    return log != null && log.toLowerCase(Locale.ROOT).contains("error");
  }

  /**
   * Warns and pauses 20 to 200 ms times {@code attempt} before the next build.
   *
   * @throws IllegalStateException if interrupted (the compile was abandoned: no further build)
   */
  static void pause(int attempt, String log) {
    PoclCacheRace.log.warn("PoCL failed a build without a compiler error (attempt {} of {}; its log: '{}'); another "
        + "process may be writing PoCL's kernel cache: building again", attempt, ATTEMPTS, log == null ? "" : log.strip());
    try {
      TimeUnit.MILLISECONDS.sleep(attempt * ThreadLocalRandom.current().nextLong(20, 200));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted before building again", e);
    }
  }

  /** What a build that failed every attempt without a compiler error adds to its message. */
  static String advice(boolean pocl, String log) {
    if (!pocl || hasDiagnostic(log)) {
      return "";
    }
    return " (PoCL failed " + ATTEMPTS + " builds without a compiler error: its kernel cache, POCL_CACHE_DIR or else "
        + "~/.cache/pocl, may be in use by other processes at once, PoCL #430 and #1480; give each rank its own "
        + "POCL_CACHE_DIR, as bin/mpi-build-rank does with MPI_BUILD_POCL_CACHE_ROOT)";
  }
}
