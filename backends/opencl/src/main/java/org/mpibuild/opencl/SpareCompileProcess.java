package org.mpibuild.opencl;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A PoCL compile process started ahead of its request, on a rank that is likely to compile, so that a cold compile
 * does not pay a process's start-up on its path: the JVM, PoCL's platform and LLVM's start-up at its first build
 * (about 0.8 s of CPU here, whatever the request). It warms up at the idle priority on any core of the job's cpuset
 * ({@link IdlePriority#anyCore}), in the time the program leaves unused on the node, not only on the rank's own
 * core, and compiles at the normal priority, where the caller runs, when the request comes
 * ({@link PoclCompileProcess}'s {@code --wait}); where the warm-up is not done then and finds no idle time, a new
 * process compiles, as without it. It serves one request: PoCL 3.1 to 5.0 keep the first value of
 * {@code POCL_BINARY_SPECIALIZE_WG} for the life of the process, which a process started ahead sets once
 * ({@link EnvironmentSlot}). The first is started after a backend's first compile, the next after each compile.
 *
 * <p>One per JVM, for the device the first backend that wanted one opened; kept while a backend wants one
 * ({@link #want}, {@link #unwant}) and for {@link #LINGER} after. A process started ahead lives in a private directory
 * of its own (its PoCL cache), deleted when it ends: by its parent, at the latest at the JVM's exit; where the JVM is
 * killed, the process finds its input closed and deletes the directory itself.
 */
final class SpareCompileProcess {
  private static final Logger log = LoggerFactory.getLogger(SpareCompileProcess.class);
  private static final Object LOCK = new Object();
  /** How many backends want a spare, and for which device. */
  private static int wanted;
  private static int platform = -1;
  private static int device = -1;
  /** Counts {@link #want} calls: a lingering process ends only if nobody wanted one since its last backend closed. */
  private static long wants;
  /** The process waiting for a request; null where none is. */
  private static SpareCompileProcess waiting;
  private static boolean exitHook;

  private final Process process;
  private final Path home;

  private SpareCompileProcess(Process process, Path home) {
    this.process = process;
    this.home = home;
  }

  /**
   * A backend on this device wants a process started ahead from now on, until its {@link #unwant}: the first is
   * started after its first compile ({@link #replenish}), so that a new job's first compile, which comes before
   * any warm-up could finish, does not share the rank's start with one.
   */
  static void want(int platformIndex, int deviceIndex) {
    synchronized (LOCK) {
      if (wanted > 0 && (platform != platformIndex || device != deviceIndex)) {
        return; // one device per JVM has spares: the first's
      }
      wanted++;
      wants++;
      platform = platformIndex;
      device = deviceIndex;
    }
  }

  /**
   * After a compile of a backend that wants one: a process for the next, where none waits, {@link #AFTER} later,
   * once the build's broadcast, loads and first launches are over (a JVM's start would share the cores with them,
   * measured at 2 ranks in new jobs: ready 1.35 times naive's time against 1.19 with none), and never in a job that
   * ends before.
   */
  static void replenish(int platformIndex, int deviceIndex) {
    after(AFTER, "mpi-build-pocl-spare-start", () -> {
      synchronized (LOCK) {
        if (platform == platformIndex && device == deviceIndex) {
          startIfWanted();
        }
      }
    });
  }

  /** Runs {@code task} {@code delay} from now on a daemon thread of its own (nothing, if the JVM ends first). */
  private static void after(Duration delay, String name, Runnable task) {
    Thread t = new Thread(() -> {
      try {
        Thread.sleep(delay.toMillis());
      } catch (InterruptedException e) {
        return;
      }
      task.run();
    }, name);
    t.setDaemon(true);
    t.start();
  }

  /** How long after a compile the next process is started ahead. */
  static final Duration AFTER = Duration.ofSeconds(2);

  /**
   * A backend that {@link #want}ed one no longer does: where no other does, the waiting process ends {@link #LINGER}
   * later, unless a backend wants one again meanwhile (a program that opens and closes an instance per phase of its
   * work, as the benchmark does per repetition, keeps it warm, as PoCL keeps LLVM loaded between contexts).
   */
  static void unwant(int platformIndex, int deviceIndex) {
    synchronized (LOCK) {
      if (wanted == 0 || platform != platformIndex || device != deviceIndex || --wanted > 0 || waiting == null) {
        return;
      }
      SpareCompileProcess spare = waiting;
      long since = wants;
      after(LINGER, "mpi-build-pocl-spare-linger", () -> {
        synchronized (LOCK) {
          if (wants != since || waiting != spare) {
            return;
          }
          waiting = null;
        }
        spare.discard();
      });
    }
  }

  /** How long a process started ahead outlives the last backend that wanted it (sccache's server idles 10 min). */
  static final Duration LINGER = Duration.ofMinutes(10);

  /**
   * The process waiting for this device, given {@code request} (a {@link PoclCompileProcess#request} line); null
   * where none waits or it could not take the request. The caller waits for its exit and {@link #discard}s it.
   */
  static SpareCompileProcess take(int platformIndex, int deviceIndex, String request) {
    SpareCompileProcess spare;
    synchronized (LOCK) {
      if (waiting == null || platform != platformIndex || device != deviceIndex) {
        return null;
      }
      spare = waiting;
      waiting = null;
    }
    try (OutputStream in = spare.process.getOutputStream()) {
      in.write(request.getBytes(StandardCharsets.UTF_8));
    } catch (IOException e) {
      log.debug("the PoCL compile process started ahead took no request: {}", e.toString());
      spare.discard();
      return null;
    }
    log.debug("a PoCL compile process started ahead compiles");
    return spare;
  }

  /** Starts a process for the wanted device where none waits (under {@link #LOCK}). */
  private static void startIfWanted() {
    if (wanted == 0 || waiting != null) {
      return;
    }
    Path home = null;
    try {
      home = Files.createTempDirectory("mpi-build-pocl", PosixFilePermissions.asFileAttribute(
          PosixFilePermissions.fromString("rwx------")));
      ProcessBuilder pb = new ProcessBuilder(PoclProcessCommand.command(IdlePriority.anyCore(), List.of(
          PoclCompileProcess.WAIT, home.toString(), Integer.toString(platform), Integer.toString(device))))
          .directory(home.toFile()).redirectErrorStream(true).redirectOutput(home.resolve("output").toFile());
      PoclProcessCommand.environment(pb, home.resolve("pocl"));
      pb.environment().put(EnvironmentSlot.NAME, EnvironmentSlot.filler());
      waiting = new SpareCompileProcess(pb.start(), home);
      log.debug("started a PoCL compile process ahead");
      if (!exitHook) {
        exitHook = true;
        Runtime.getRuntime().addShutdownHook(new Thread(SpareCompileProcess::endAtExit, "mpi-build-pocl-spare-exit"));
      }
    } catch (IOException | RuntimeException e) {
      log.debug("no PoCL compile process started ahead: {}", e.toString());
      PoclProgramDirectory.deleteQuietly(null, home);
    }
  }

  /** At the JVM's exit: the waiting process ends now, not when it finds its input closed after its warm-up. */
  private static void endAtExit() {
    SpareCompileProcess spare;
    synchronized (LOCK) {
      wanted = 0;
      spare = waiting;
      waiting = null;
    }
    if (spare != null) {
      spare.discard();
    }
  }

  Process process() {
    return process;
  }

  /** Where the process's output goes. */
  Path output() {
    return home.resolve("output");
  }

  /** Ends the process (where it has not ended) and deletes its directory. */
  void discard() {
    if (process.isAlive()) {
      process.destroyForcibly();
      try {
        process.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    PoclProgramDirectory.deleteQuietly(null, home);
  }

  /** Says why a process started ahead did not compile the request (a process of the request's own then does). */
  static void reportFallback(int exit, String error, String output) {
    if (exit == PoclSpecialization.EXIT_NOT_WARM) {
      log.debug("the PoCL compile process started ahead was not warm ({}); a new process compiles", error.strip());
      return;
    }
    log.info("the PoCL compile process started ahead did not compile (exit {}{}); a new process does", exit,
        error.isBlank() ? output.isBlank() ? "" : ": " + output.strip() : ": " + error.strip());
  }
}
