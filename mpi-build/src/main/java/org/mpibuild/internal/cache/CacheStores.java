package org.mpibuild.internal.cache;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.mpibuild.internal.comm.LogContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cache entries this process writes after its builds, off the path to any rank's ready kernel: an entry's
 * signature, writes and fsyncs took 125-147 ms of every rank's time at 2 ranks when the root wrote it before going
 * on. They run one at a time, in order, on one daemon thread that ends when idle (an idle thread that is no daemon
 * would hold the JVM's exit back); a shutdown hook waits for those queued or under way when the JVM exits, normally
 * or by {@code System.exit}, at most {@link #AT_EXIT}. A lookup of a key
 * waits for that key's writes first ({@link #await}), so a process reads what it wrote. Their file operations are
 * not counted in a build's ({@link CacheDirectory.AFTER_BUILD}).
 */
public final class CacheStores {
  private static final Logger log = LoggerFactory.getLogger(CacheStores.class);
  /** How long a lookup or a close waits for writes under way (a write takes milliseconds; a hung disk, longer). */
  static final long WAIT_NANOS = 60_000_000_000L;
  private static final String AT_EXIT_THREAD = "mpi-build-cache-store-at-exit";
  /** How long the JVM's exit waits for them. */
  static final Duration AT_EXIT = Duration.ofSeconds(10);
  private static final ThreadPoolExecutor THREAD = new ThreadPoolExecutor(1, 1, 5, TimeUnit.SECONDS,
      new LinkedBlockingQueue<>(), r -> {
        Thread t = new Thread(r, "mpi-build-cache-store");
        t.setDaemon(true);
        return t;
      });
  /** The writes queued or under way, with the key of the entry each writes. */
  private static final Map<Future<?>, String> PENDING = new ConcurrentHashMap<>();

  static {
    THREAD.allowCoreThreadTimeOut(true);
    try {
      Runtime.getRuntime().addShutdownHook(new Thread(() -> await(null, AT_EXIT), AT_EXIT_THREAD));
    } catch (IllegalStateException e) {
      // first used while the JVM exits: the writes then run at once (submit), nothing to wait for
    }
  }

  private CacheStores() {}

  /**
   * Queues {@code write}, the entry of {@code key}; where no thread can run it, runs it here, now, as it would have
   * run before.
   *
   * @return its future, done once it has run
   */
  static Future<?> submit(String key, Runnable write) {
    FutureTask<Void> task = new FutureTask<>(onWritersThread(write)) {
      @Override
      protected void done() {
        PENDING.remove(this);
      }
    };
    PENDING.put(task, key == null ? "" : key);
    try {
      if (Thread.currentThread().getName().equals(AT_EXIT_THREAD) || THREAD.isShutdown()) {
        throw new IllegalStateException("the JVM is exiting");
      }
      THREAD.execute(task);
    } catch (RuntimeException | Error e) {
      log.debug("no thread for a cache write ({}); written now", e.toString());
      task.run();
    }
    return task;
  }

  /**
   * Runs {@code task} on the writers' thread once it is free, where nothing waits for it: work that makes a later
   * write faster (the signing key's decoding, {@link KernelCache#prepareToStore}). Dropped where no thread can run it.
   */
  static void ahead(Runnable task) {
    try {
      if (!THREAD.isShutdown()) {
        THREAD.execute(new FutureTask<>(onWritersThread(task)));
      }
    } catch (RuntimeException | Error e) {
      log.debug("no thread to get ready for a cache write ({}); it is done when the entry is written", e.toString());
    }
  }

  /**
   * {@code work} as the writers' thread runs it: with the caller's rank in its log lines, and its file operations
   * not counted in a build's ({@link CacheDirectory#AFTER_BUILD}).
   */
  private static java.util.concurrent.Callable<Void> onWritersThread(Runnable work) {
    return LogContext.carried(() -> {
      boolean counted = CacheDirectory.AFTER_BUILD.get();
      CacheDirectory.AFTER_BUILD.set(true);
      try {
        work.run();
      } finally {
        CacheDirectory.AFTER_BUILD.set(counted);
      }
      return null;
    });
  }

  /**
   * Waits for the writes of the entry of {@code key} queued or under way in this process (and, the writes running
   * in order, for those queued before them), at most 60 s.
   */
  public static void await(String key) {
    await(key, Duration.ofNanos(WAIT_NANOS));
  }

  /**
   * Waits for the writes of {@code key} (null: every one) queued or under way, at most {@code limit} in all; one
   * that outlasts it is left to finish and no longer waited for, with a warning.
   */
  static void await(String key, Duration limit) {
    long deadline = System.nanoTime() + limit.toNanos();
    for (Map.Entry<Future<?>, String> e : PENDING.entrySet()) {
      if (key == null || key.equals(e.getValue())) {
        waitFor(e.getKey(), deadline);
      }
    }
  }

  /** Waits for {@code write} until {@code deadline}; true if it is done. */
  static boolean waitFor(Future<?> write, long deadline) {
    try {
      write.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      return true;
    } catch (TimeoutException e) {
      if (PENDING.remove(write) != null) {
        log.warn("a cache entry is still being written; it is left to finish, and nothing waits for it");
      }
      return false;
    } catch (ExecutionException | CancellationException e) {
      log.warn("a cache entry was not written: {}", e.getCause() != null ? e.getCause().toString() : e.toString());
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
