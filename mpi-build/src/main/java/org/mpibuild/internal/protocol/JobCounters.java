package org.mpibuild.internal.protocol;

import java.nio.ByteBuffer;
import java.nio.LongBuffer;
import java.time.Duration;
import org.mpibuild.BuildStats;
import org.mpibuild.JobStatistics;
import org.mpibuild.internal.comm.Backoff;
import org.mpibuild.internal.comm.DeadlineAllReduce;
import org.mpibuild.spi.Communicator;

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
  public static final int OBTAIN_NS = 7;
  public static final int WAIT_NS = 8;
  public static final int BROADCAST_NS = 9;
  public static final int LOAD_NS = 10;
  public static final int UNTRUSTED = 11;
  public static final int TRUST_CHECK_NS = 12;
  public static final int LENGTH = 13;

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
    v[OBTAIN_NS] += s.obtainNanos();
    v[WAIT_NS] += s.waitNanos();
    v[BROADCAST_NS] += s.broadcastNanos();
    v[LOAD_NS] += s.loadNanos();
  }

  /** A copy of the counters, indexed by the constants above. */
  public synchronized long[] toArray() {
    return v.clone();
  }

  /**
   * The job's statistics: every rank's counters gathered, summed, and their maximum taken, on every rank.
   * Collective.
   */
  public JobStatistics reduce(Communicator comm, Duration deadline, Backoff waiting, long untrustedEntries,
      long trustCheckNanos) {
    DeadlineAllReduce.allReduceMax(comm, new int[] {0}, deadline, waiting, () -> "the statistics call"); // every rank is here
    long[] mine = toArray();
    mine[UNTRUSTED] = untrustedEntries;
    mine[TRUST_CHECK_NS] = trustCheckNanos;
    ByteBuffer out = ByteBuffer.allocate(mine.length * Long.BYTES);
    out.asLongBuffer().put(mine);
    byte[][] all = comm.allGather(out.array());
    long[] sum = new long[LENGTH];
    long[] max = new long[LENGTH];
    for (byte[] b : all) {
      LongBuffer in = ByteBuffer.wrap(b).asLongBuffer();
      for (int i = 0; i < LENGTH; i++) {
        long x = in.get(i);
        sum[i] += x;
        max[i] = Math.max(max[i], x);
      }
    }
    // Every rank counts each build once; the job's build count is one rank's.
    return new JobStatistics(all.length, max[BUILDS], sum[COMPILES], sum[CACHE_HITS], sum[CACHE_MISSES],
        sum[BYTES_BROADCAST], sum[CACHE_FILE_OPS], sum[UNTRUSTED], sum[TRUST_CHECK_NS], phase(sum, max, AGREEMENT_NS), phase(sum, max, OBTAIN_NS),
        phase(sum, max, WAIT_NS), phase(sum, max, BROADCAST_NS), phase(sum, max, LOAD_NS));
  }

  private static JobStatistics.Phase phase(long[] sum, long[] max, int i) {
    return new JobStatistics.Phase(sum[i], max[i]);
  }
}
