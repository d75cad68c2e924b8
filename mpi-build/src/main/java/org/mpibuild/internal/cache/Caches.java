package org.mpibuild.internal.cache;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.mpibuild.internal.settings.CacheSettings;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.spi.Communicator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The caches a build may use: the shared one, opened by a rank only when it is the root of a build, and
 * an optional node-local one with the communicator of this rank's node, written by one rank per node.
 * Ranks that never act as root never touch the shared directory.
 */
public final class Caches implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Caches.class);
  private final CacheSettings settings;
  private final Communicator nodeComm;
  private KernelCache shared;
  private KernelCache node;
  private boolean sharedOpened;
  private boolean nodeOpened;
  /** Stores waiting for a binary made after its program ({@link #whenComplete}); close waits for them. */
  private final List<Thread> fills = new ArrayList<>();
  /** Entries of complete envelopes queued to be written ({@link CacheStores}); close waits for them. */
  private final List<Future<?>> writes = new ArrayList<>();

  private Caches(CacheSettings settings, Communicator nodeComm) {
    this.settings = settings;
    this.nodeComm = nodeComm;
  }

  /** No caching. */
  public static Caches none() {
    return new Caches(CacheSettings.off(), null);
  }

  /**
   * Caches as {@code settings} say, with the communicator of this rank's node, which they own from now on
   * (and close) whether or not a node-local cache uses it.
   */
  public static Caches of(CacheSettings settings, Communicator node) {
    if (settings.access() == CacheSettings.Access.OFF) {
      node.close();
      return none();
    }
    if (settings.nodeDir() == null) {
      node.close();
      return new Caches(settings, null);
    }
    return new Caches(settings, node);
  }

  /** Whether any cache is in use. */
  public boolean enabled() {
    return settings.access() != CacheSettings.Access.OFF;
  }

  /** The shared cache, opened on first use; null if off or unusable. */
  public synchronized KernelCache shared() {
    if (!sharedOpened) {
      sharedOpened = true;
      shared = KernelCache.open(settings);
    }
    return shared;
  }

  /** The node-local cache, opened on first use; null if none is configured or it is unusable. */
  public synchronized KernelCache node() {
    if (!nodeOpened) {
      nodeOpened = true;
      node = settings.nodeDir() == null ? null : KernelCache.open(settings, settings.nodeDir());
    }
    return node;
  }

  /** This rank's node communicator, or null without a node-local cache. */
  public Communicator nodeComm() {
    return nodeComm;
  }

  /** File system calls made on the caches so far by this rank. */
  /** How many entries were refused, and rebuilt, because no trusted key signed them. */
  public synchronized long untrustedEntries() {
    return (shared == null ? 0 : shared.untrustedEntries()) + (node == null ? 0 : node.untrustedEntries());
  }

  /** Nanoseconds spent deciding whether entries are trusted, both caches together. */
  public synchronized long trustCheckNanos() {
    return (shared == null ? 0 : shared.trustCheckNanos()) + (node == null ? 0 : node.trustCheckNanos());
  }

  public synchronized long fileOperations() {
    return (shared == null ? 0 : shared.fileOperations()) + (node == null ? 0 : node.fileOperations());
  }

  /**
   * Runs {@code then}, which writes the entry of {@code key}, on the thread that writes this process's entries
   * ({@link CacheStores}: off the path to every rank's ready kernel; this process's next lookup of the key, {@link
   * #close} and the JVM's exit wait for it), or here where no thread can: with a complete {@code envelope} at once;
   * with a pending one once its binary is made, which a thread of its own waits for ({@link Envelope#awaitMade}; null
   * if it could not be: nothing is cached then, and the program already runs). {@link #awaitFills} waits for both.
   * If no thread can start for a pending envelope, {@code onNoThread} (a lock held for the entry) is closed and the
   * error thrown.
   */
  public void whenComplete(Envelope envelope, String key, Consumer<Envelope> then, AutoCloseable onNoThread) {
    if (!envelope.isPending()) {
      Future<?> write = CacheStores.submit(key, () -> then.accept(envelope));
      synchronized (this) {
        writes.removeIf(Future::isDone);
        writes.add(write);
      }
      return;
    }
    Thread t = new Thread(() -> {
      Envelope complete = null;
      try {
        complete = envelope.awaitMade();
      } catch (RuntimeException | Error e) {
        log.warn("the binary of {} is not cached: {}", envelope.metadata().kernelNames(), e.toString());
      } finally {
        try { // on the writer's thread too: in order with the others, waited for at the JVM's exit, not counted
          Envelope made = complete;
          CacheStores.waitFor(CacheStores.submit(key, () -> then.accept(made)),
              System.nanoTime() + CacheStores.WAIT_NANOS);
        } finally {
          synchronized (this) {
            fills.remove(Thread.currentThread());
          }
        }
      }
    }, "mpi-build-cache-fill");
    t.setDaemon(true);
    synchronized (this) {
      fills.add(t);
    }
    try {
      t.start();
    } catch (RuntimeException | Error e) {
      synchronized (this) {
        fills.remove(t);
      }
      if (onNoThread != null) {
        try {
          onNoThread.close();
        } catch (Exception ignored) {
          // the error below is what matters
        }
      }
      throw e;
    }
  }

  /** {@link #whenComplete(Envelope, String, Consumer, AutoCloseable)} with nothing to close. */
  public void whenComplete(Envelope envelope, String key, Consumer<Envelope> then) {
    whenComplete(envelope, key, then, null);
  }

  /**
   * Waits at most {@code limit} for the cache entries still being filled ({@link #whenComplete}); a fill
   * that runs over it is left, with a warning (its own compile timeout ends it).
   */
  public void awaitFills(Duration limit) {
    long deadline = System.nanoTime() + limit.toNanos();
    awaitWrites(deadline);
    List<Thread> pending;
    synchronized (this) {
      pending = new ArrayList<>(fills);
      fills.clear();
    }
    for (Thread t : pending) {
      try {
        t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      if (t.isAlive()) {
        log.warn("a cache entry was still being written after {} s; it is left to finish", limit.toSeconds());
      }
    }
  }

  /** The settings. */
  public CacheSettings settings() {
    return settings;
  }

  /** Waits until {@code deadline} for the entries this instance queued to be written ({@link CacheStores}). */
  private void awaitWrites(long deadline) {
    List<Future<?>> queued;
    synchronized (this) {
      if (writes.isEmpty()) {
        return;
      }
      queued = new ArrayList<>(writes);
      writes.clear();
    }
    for (Future<?> write : queued) {
      CacheStores.waitFor(write, deadline);
    }
  }

  /** Waits for the entries this instance queued to be written, then closes the node's communicator. */
  @Override
  public void close() {
    awaitWrites(System.nanoTime() + CacheStores.WAIT_NANOS);
    if (nodeComm != null) {
      nodeComm.close();
    }
  }
}
