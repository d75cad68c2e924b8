package org.mpibuild;

/**
 * What one rank did to obtain its kernel, and how long each phase took there.
 *
 * @param rank this rank in the build's communicator (0 in local mode)
 * @param root the rank that obtained the binary (from a cache, or by compiling) and broadcast it
 * @param compiled whether this rank ran the compiler
 * @param cacheHit whether this rank (the root) found the binary, or a recent compile failure, in a cache
 * @param agreementNanos time spent checking that all ranks asked for the same kernel
 * @param obtainNanos time the root spent obtaining the binary: cache lookups, a wait for another job's cache
 *     lock, and the compile if there was one (a cache hit is not a compile; see {@code compiled}); 0 on
 *     other ranks
 * @param waitNanos time a receiver spent waiting for the root to start sending (the root's compile, seen
 *     from here, and this rank's part of it where the root shared it); 0 on the root
 * @param broadcastNanos time spent sending or receiving the binary, from its first byte, including the
 *     digest check; near 0 in local mode
 * @param loadNanos time spent loading the binary into this rank's device, and agreeing that every rank
 *     did; 0 on the root, which keeps the program it compiled
 * @param binaryBytes size of the binary (the payload), in bytes; 0 in a job of one rank whose kernel was ready
 *     before its binary (made afterwards for the cache, or not at all without one: {@code docs/launch-shapes.md})
 * @param cacheFileOperations file system calls this rank made on the caches during this build (0 on ranks other
 *     than the root); the entry's write, which comes after the build on a thread of its own, is not counted
 */
public record BuildStats(
    int rank,
    int root,
    boolean compiled,
    boolean cacheHit,
    long agreementNanos,
    long obtainNanos,
    long waitNanos,
    long broadcastNanos,
    long loadNanos,
    long binaryBytes,
    long cacheFileOperations) {

  /**
   * Returns the role of this rank: {@code "root"} for the rank that obtained the binary, {@code "receiver"}
   * otherwise.
   *
   * @return the role
   */
  public String role() {
    return rank == root ? "root" : "receiver";
  }

  /**
   * Returns the total time of the build on this rank.
   *
   * @return the sum of all phases, in nanoseconds
   */
  public long totalNanos() {
    return agreementNanos + obtainNanos + waitNanos + broadcastNanos + loadNanos;
  }
}
