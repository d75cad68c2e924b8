package org.mpibuild;

import org.mpibuild.internal.protocol.CollectiveBuild;

/**
 * What {@link MpiBuild#precompile} did with one request.
 *
 * @param index the request's position in the list
 * @param request the request
 * @param outcome compiled, found in the cache, or failed
 * @param rank the rank that compiled it or read it from the cache
 * @param binaryBytes the binary's size; 0 if it failed
 * @param error why it failed, or the empty string
 * @param buildLog the compiler's log, or the empty string
 */
public record PrecompileResult(int index, KernelSource request, Outcome outcome, int rank, long binaryBytes,
    String error, String buildLog) {

  /** What happened to a request. */
  public enum Outcome {
    /** Compiled by this job (and stored in the cache, if one is on). */
    COMPILED,
    /** Already in the cache. */
    CACHED,
    /** The build failed; {@link #error()} and {@link #buildLog()} say why. */
    FAILED
  }

  /** @return whether the binary was built or found */
  public boolean ok() {
    return outcome != Outcome.FAILED;
  }

  static PrecompileResult of(CollectiveBuild.Entry e, Outcome ifOk) {
    Outcome o = e.ok() ? (ifOk == null ? (e.stats().cacheHit() ? Outcome.CACHED : Outcome.COMPILED) : ifOk)
        : Outcome.FAILED;
    String error = e.ok() ? "" : e.envelope().metadata().error();
    return new PrecompileResult(e.index(), e.request(), o, e.stats().root(), e.ok() ? e.envelope().payload().length() : 0,
        error, e.envelope().metadata().buildLog());
  }
}
