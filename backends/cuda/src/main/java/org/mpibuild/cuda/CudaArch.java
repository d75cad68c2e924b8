package org.mpibuild.cuda;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * CUDA build targets. A rank's target is its GPU's architecture, {@code sm_XY}. A build target is a
 * comma-separated, sorted list of architectures: one ({@code sm_90}) gives a cubin; several
 * ({@code sm_80,sm_90}) give a fatbin with a cubin for each plus PTX of the newest, so every rank loads
 * native code and newer GPUs can JIT the PTX. A GPU also runs the SASS of an earlier minor revision of
 * its major version (an sm_80 cubin on sm_86), as the driver does.
 */
final class CudaArch {
  private static final Pattern ARCH = Pattern.compile("(?:sm_|compute_)?(\\d{2,3})[a-z]?");

  private CudaArch() {}

  /** Parses "sm_80,sm_90", "80 90" or "sm_90a" into sorted, distinct sm_ names. */
  static List<String> parse(String spec) {
    TreeSet<Integer> numbers = new TreeSet<>();
    List<String> suffixed = new ArrayList<>();
    for (String part : spec.split("[,\\s]+")) {
      if (part.isBlank()) {
        continue;
      }
      Matcher m = ARCH.matcher(part.trim().toLowerCase(Locale.ROOT));
      if (!m.matches()) {
        throw new IllegalArgumentException("MPI_BUILD_CUDA_ARCH: '" + part + "' is not a CUDA architecture such as sm_90");
      }
      if (part.trim().matches(".*\\d[a-z]$")) {
        suffixed.add("sm_" + part.trim().replaceAll("^(sm_|compute_)", "").toLowerCase(Locale.ROOT));
      } else {
        numbers.add(Integer.parseInt(m.group(1)));
      }
    }
    List<String> out = new ArrayList<>();
    numbers.forEach(n -> out.add("sm_" + n));
    out.addAll(suffixed);
    if (out.isEmpty()) {
      throw new IllegalArgumentException("MPI_BUILD_CUDA_ARCH is empty");
    }
    return out;
  }

  /** The numeric part of sm_XY. */
  static int number(String arch) {
    return Integer.parseInt(arch.replaceAll("[^0-9]", ""));
  }

  /** The build target for these architectures. */
  static String target(List<String> archs) {
    return String.join(",", archs);
  }

  /**
   * Whether a device of architecture {@code mine} runs a binary built for {@code target}: with SASS for its
   * architecture or a binary-compatible one, or by JIT-compiling the PTX that a fatbin carries for its
   * newest architecture (see {@link CudaBinaryContents#plan}).
   */
  static boolean runs(String target, String mine) {
    if (mine == null || target.isBlank()) {
      return false;
    }
    return CudaBinaryContents.ofTarget(parse(target)).plan(mine).runs();
  }
}
