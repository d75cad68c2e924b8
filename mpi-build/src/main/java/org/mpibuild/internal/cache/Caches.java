package org.mpibuild.internal.cache;

import org.mpibuild.internal.settings.CacheSettings;
import org.mpibuild.spi.Communicator;

/**
 * The caches a build may use: the shared one, opened by a rank only when it is the root of a build, and
 * an optional node-local one with the communicator of this rank's node, written by one rank per node.
 * Ranks that never act as root never touch the shared directory.
 */
public final class Caches implements AutoCloseable {
  private final CacheSettings settings;
  private final Communicator nodeComm;
  private KernelCache shared;
  private KernelCache node;
  private boolean sharedOpened;
  private boolean nodeOpened;

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

  /** The settings. */
  public CacheSettings settings() {
    return settings;
  }

  @Override
  public void close() {
    if (nodeComm != null) {
      nodeComm.close();
    }
  }
}
