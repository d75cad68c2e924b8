package org.mpibuild;

import java.util.Locale;

/**
 * What a whole job did across the builds of one {@link MpiBuild}, reduced over every rank of its
 * communicator by {@link MpiBuild#statistics()}.
 *
 * @param ranks the number of ranks
 * @param builds successful collective builds
 * @param compiles compiles that really ran, summed over ranks (failed ones included)
 * @param cacheHits builds whose root found the binary in a cache
 * @param cacheMisses builds whose root looked in a cache and had to compile
 * @param bytesBroadcast binary bytes the roots broadcast, and the parts of shared compiles their ranks sent
 * @param cacheFileOperations file system calls made on the caches during the builds, summed over ranks (the
 *     entries' writes, after the builds, not counted)
 * @param untrustedEntries cache entries refused (and rebuilt) because no trusted key signed them, summed over
 *     ranks
 * @param trustCheckNanos time spent deciding whether cache entries are trusted (reading the signing key,
 *     checking seals and signatures), summed over ranks
 * @param agreement time agreeing on requests
 * @param obtain time the roots spent obtaining binaries: cache lookups, lock waits and compiles
 * @param waitForRoot time receivers waited for their root
 * @param broadcast time transferring and checking binaries
 * @param load time loading binaries and agreeing that every rank did
 */
public record JobStatistics(int ranks, long builds, long compiles, long cacheHits, long cacheMisses,
    long bytesBroadcast, long cacheFileOperations, long untrustedEntries, long trustCheckNanos, Phase agreement, Phase obtain, Phase waitForRoot, Phase broadcast,
    Phase load) {

  /**
   * Time spent in one phase.
   *
   * @param totalNanos summed over ranks
   * @param maxNanos the largest single rank's time
   */
  public record Phase(long totalNanos, long maxNanos) {
    String json() {
      return String.format(Locale.ROOT, "{\"total_ms\": %.3f, \"max_rank_ms\": %.3f}", totalNanos / 1e6, maxNanos / 1e6);
    }
  }

  /**
   * Returns the statistics as a JSON object.
   *
   * @return one JSON object, on one line
   */
  public String toJson() {
    return "{\"ranks\": " + ranks + ", \"builds\": " + builds + ", \"compiles\": " + compiles
        + ", \"cache_hits\": " + cacheHits + ", \"cache_misses\": " + cacheMisses + ", \"bytes_broadcast\": "
        + bytesBroadcast + ", \"cache_file_operations\": " + cacheFileOperations + ", \"untrusted_entries\": "
        + untrustedEntries + ", \"trust_check_ms\": " + String.format(Locale.ROOT, "%.3f", trustCheckNanos / 1e6)
        + ", \"phases\": {\"agreement\": "
        + agreement.json() + ", \"obtain\": " + obtain.json() + ", \"wait\": " + waitForRoot.json() + ", \"broadcast\": "
        + broadcast.json() + ", \"load\": " + load.json() + "}}";
  }
}
