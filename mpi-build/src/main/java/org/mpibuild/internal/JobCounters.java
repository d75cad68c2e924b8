package org.mpibuild.internal;

import org.mpibuild.BuildStats;

/** What one rank has done across the builds of one MpiBuild, for job-wide statistics. */
public final class JobCounters {
  /** Order of {@link #toArray()}. */
  public static final int BUILDS = 0;
  public static final int COMPILES = 1;
  public static final int CACHE_HITS = 2;
  public static final int CACHE_MISSES = 3;
  public static final int BYTES_BROADCAST = 4;
  public static final int CACHE_FILE_OPS = 5;
  public static final int AGREEMENT_NS = 6;
  public static final int COMPILE_NS = 7;
  public static final int WAIT_NS = 8;
  public static final int BROADCAST_NS = 9;
  public static final int LOAD_NS = 10;
  public static final int LENGTH = 11;

  private final long[] v = new long[LENGTH];

  /** Counts what the root did to obtain a binary, whether or not the build then succeeded. */
  synchronized void rootOutcome(boolean compiled, boolean cacheHit, boolean cacheEnabled) {
    if (compiled) {
      v[COMPILES]++;
    }
    if (cacheEnabled) {
      v[cacheHit ? CACHE_HITS : CACHE_MISSES]++;
    }
  }

  /** Adds a successful build. */
  synchronized void add(BuildStats s, long bytesSent) {
    v[BUILDS]++;
    v[BYTES_BROADCAST] += bytesSent;
    v[CACHE_FILE_OPS] += s.cacheFileOperations();
    v[AGREEMENT_NS] += s.agreementNanos();
    v[COMPILE_NS] += s.compileNanos();
    v[WAIT_NS] += s.waitNanos();
    v[BROADCAST_NS] += s.broadcastNanos();
    v[LOAD_NS] += s.loadNanos();
  }

  /** A copy of the counters, indexed by the constants above. */
  public synchronized long[] toArray() {
    return v.clone();
  }
}
