package org.mpibuild.cuda;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the root found in a binary it just built: one line saying what it holds, then, for each
 * architecture asked for that has no SASS and for each rank target that would not run SASS, a warning
 * (JIT-compiled PTX, or nothing to run). Rank targets {@code none} (no GPU) are left out. It goes into the build
 * log, which travels with the binary to every rank.
 *
 * @param info lines for the build log only
 * @param warnings lines for the build log that are also logged as warnings
 */
record Coverage(List<String> info, List<String> warnings) {
  private static final Logger log = LoggerFactory.getLogger(Coverage.class);

  /**
   * Checks a binary against the architectures asked for and the targets of the ranks it is for.
   *
   * @param binary the fatbin or cubin
   * @param requested the architectures of the build target
   * @param rankTargets the target of every rank the binary is for (duplicates counted, {@code none} skipped)
   * @return what to report
   */
  static Coverage of(byte[] binary, List<String> requested, List<String> rankTargets) {
    List<String> info = new ArrayList<>();
    List<String> warnings = new ArrayList<>();
    CudaBinaryContents contents;
    try {
      contents = CudaBinaryContents.read(binary);
    } catch (CudaBinaryFormatException e) {
      warnings.add("mpi-build: cannot list what the binary holds, so whether ranks JIT-compile PTX is unknown: "
          + e.getMessage());
      return new Coverage(info, warnings);
    }
    info.add("mpi-build: the binary is a " + contents.summary());
    for (String a : requested) {
      if (contents.sass().stream().noneMatch(c -> c.arch() == CudaArch.number(a))) {
        warnings.add("mpi-build: " + a + " was asked for, but the binary holds no SASS for it (check the build"
            + " options)");
      }
    }
    for (Map.Entry<String, Integer> t : countRanks(rankTargets).entrySet()) {
      addRankTarget(contents, t.getKey(), t.getValue(), info, warnings);
    }
    return new Coverage(info, warnings);
  }

  /** How many ranks have each target, in the order first seen; {@code none} (no GPU) left out. */
  private static Map<String, Integer> countRanks(List<String> rankTargets) {
    Map<String, Integer> ranks = new LinkedHashMap<>();
    for (String t : rankTargets) {
      if (t != null && !t.equals("none")) {
        ranks.merge(t, 1, Integer::sum);
      }
    }
    return ranks;
  }

  /** Reports how the ranks of one target run the binary, unless they run its SASS. */
  private static void addRankTarget(CudaBinaryContents contents, String target, int ranks, List<String> info,
      List<String> warnings) {
    CudaBinaryContents.LoadPlan plan = contents.plan(target);
    String who = target + " (the GPU of " + ranks + (ranks == 1 ? " rank" : " ranks") + " in the job that built it)";
    switch (plan.how()) {
      case COMPATIBLE_SASS:
        info.add("mpi-build: no SASS for " + who + "; those ranks run the binary-compatible SASS for "
            + plan.code().sassName() + ", without JIT");
        break;
      case JIT_PTX:
        warnings.add("mpi-build: no SASS for " + who + "; those ranks JIT-compile the PTX "
            + plan.code().ptxDescription() + " at load (add " + target + " to MPI_BUILD_CUDA_ARCH, or unset it"
            + " to build for the job's GPUs)");
        break;
      case NONE:
        warnings.add("mpi-build: no code for " + who + ": neither SASS nor PTX it can JIT-compile; those ranks"
            + " cannot load the binary");
        break;
      default:
        break;
    }
  }

  /**
   * Returns every line, the information first.
   *
   * @return the lines
   */
  List<String> lines() {
    List<String> all = new ArrayList<>(info);
    all.addAll(warnings);
    return all;
  }

  /**
   * Logs the warnings (and the information, at debug level) and appends every line to a build log.
   *
   * @param buildLog the compiler's log, or null
   * @return the log with the lines after it, each ending in a newline
   */
  String appendTo(String buildLog) {
    warnings.forEach(w -> log.warn(w.substring("mpi-build: ".length())));
    info.forEach(i -> log.debug(i.substring("mpi-build: ".length())));
    StringBuilder b = new StringBuilder(buildLog == null ? "" : buildLog);
    if (b.length() > 0 && b.charAt(b.length() - 1) != '\n') {
      b.append('\n');
    }
    lines().forEach(l -> b.append(l).append('\n'));
    return b.toString();
  }
}
