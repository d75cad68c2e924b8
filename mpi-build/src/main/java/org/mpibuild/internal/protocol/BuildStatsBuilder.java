package org.mpibuild.internal.protocol;

import org.mpibuild.BuildStats;

/**
 * Builds a {@link BuildStats} by its fields' names, for the protocol's call sites: a field left unset is 0
 * (or false). The record itself, part of the API, stays as it is.
 */
final class BuildStatsBuilder {
  private int rank;
  private int root;
  private boolean compiled;
  private boolean cacheHit;
  private long agreementNanos;
  private long obtainNanos;
  private long waitNanos;
  private long broadcastNanos;
  private long loadNanos;
  private long binaryBytes;
  private long cacheFileOperations;

  BuildStatsBuilder rank(int rank) {
    this.rank = rank;
    return this;
  }

  BuildStatsBuilder root(int root) {
    this.root = root;
    return this;
  }

  BuildStatsBuilder compiled(boolean compiled) {
    this.compiled = compiled;
    return this;
  }

  BuildStatsBuilder cacheHit(boolean cacheHit) {
    this.cacheHit = cacheHit;
    return this;
  }

  BuildStatsBuilder agreementNanos(long agreementNanos) {
    this.agreementNanos = agreementNanos;
    return this;
  }

  BuildStatsBuilder obtainNanos(long obtainNanos) {
    this.obtainNanos = obtainNanos;
    return this;
  }

  BuildStatsBuilder waitNanos(long waitNanos) {
    this.waitNanos = waitNanos;
    return this;
  }

  BuildStatsBuilder broadcastNanos(long broadcastNanos) {
    this.broadcastNanos = broadcastNanos;
    return this;
  }

  BuildStatsBuilder loadNanos(long loadNanos) {
    this.loadNanos = loadNanos;
    return this;
  }

  BuildStatsBuilder binaryBytes(long binaryBytes) {
    this.binaryBytes = binaryBytes;
    return this;
  }

  BuildStatsBuilder cacheFileOperations(long cacheFileOperations) {
    this.cacheFileOperations = cacheFileOperations;
    return this;
  }

  BuildStats build() {
    return new BuildStats(rank, root, compiled, cacheHit, agreementNanos, obtainNanos, waitNanos, broadcastNanos,
        loadNanos, binaryBytes, cacheFileOperations);
  }
}
