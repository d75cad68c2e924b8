package org.mpibuild.bench;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.mpibuild.Kernel;
import org.mpibuild.MpiBuild;
import org.mpibuild.examples.Saxpy;

/**
 * What signed cache entries cost a warm start. A warm start is a fresh JVM that opens mpi-build (local,
 * OpenCL) and gets saxpy from the cache. Since entries are signed, it also reads its key file and checks the
 * entry's seal (a keyed SHA-256), cold; the library times exactly that ({@code JobStatistics.trustCheckNanos}).
 * Each repetition is one fresh warm start: its wall time from spawn to exit, and, inside it, the time spent
 * deciding trust. The overhead is trust / (warm start - trust): the share signing added to a warm start.
 */
final class SigningBench {
  private SigningBench() {}

  static String run(Path out, int reps) throws Exception {
    Path dir = Files.createTempDirectory(out, "signing");
    Path key = dir.resolve("key");
    Path cache = dir.resolve("cache");
    String cp = System.getProperty("java.class.path");
    try {
      long entryBytes = cold(cache, key);
      List<Double> warms = new ArrayList<>();
      List<Double> verifies = new ArrayList<>();
      List<Double> overheads = new ArrayList<>();
      for (int rep = 0; rep < reps; rep++) {
        long t0 = System.nanoTime();
        double v = parse(childOutput(cp, "warm", cache.toString(), key.toString()));
        double w = System.nanoTime() - t0;
        warms.add(w);
        verifies.add(v);
        overheads.add(v / (w - v));
        System.out.printf(Locale.ROOT, "bench signing: repetition %d: warm start %.0f ms, of which deciding trust "
            + "%.2f ms%n", rep + 1, w / 1e6, v / 1e6);
      }
      String line = String.format(Locale.ROOT, "bench: signing entry_bytes=%d reps=%d warm_start_ms=%.0f "
          + "trust_check_ms=%.2f overhead_on_warm_start=%.2f%% [%.2f%%-%.2f%%]", entryBytes, reps,
          Stats.median(warms) / 1e6, Stats.median(verifies) / 1e6, 100 * Stats.median(overheads),
          100 * Collections.min(overheads), 100 * Collections.max(overheads));
      Files.writeString(out.resolve("signing.txt"), line + "\n");
      System.out.println(line);
      return line;
    } finally {
      org.mpibuild.support.BackendSupport.deleteTree(dir);
    }
  }

  /** Fills the cache with saxpy (compiled, stored, signed); returns the entry's approximate size. */
  private static long cold(Path cache, Path key) throws Exception {
    System.setProperty("mpibuild.cache.signingKey", key.toString());
    try (MpiBuild mb = MpiBuild.builder().local().backend("opencl").cacheDirectory(cache).build();
         Kernel k = mb.mpiBuildKernel(Saxpy.REQUEST, 0)) {
      return k.stats().binaryBytes() + 1024;
    } finally {
      System.clearProperty("mpibuild.cache.signingKey");
    }
  }

  private static String childOutput(String cp, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("java", "-cp", cp, SigningBench.class.getName()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IllegalStateException("child " + args[0] + " failed:\n" + out);
    }
    return out;
  }

  private static double parse(String out) {
    for (String l : out.split("\n")) {
      if (l.startsWith("trust_ns=")) {
        return Double.parseDouble(l.substring("trust_ns=".length()).trim());
      }
    }
    throw new IllegalStateException("no trust_ns in:\n" + out);
  }

  /** The child: {@code warm CACHE KEY}, a warm start that prints the time it spent deciding trust. */
  public static void main(String[] args) throws Exception {
    System.setProperty("mpibuild.cache.signingKey", args[2]);
    try (MpiBuild mb = MpiBuild.builder().local().backend("opencl").cacheDirectory(Path.of(args[1])).build()) {
      try (Kernel k = mb.mpiBuildKernel(Saxpy.REQUEST, 0)) {
        if (k.stats().compiled()) {
          throw new IllegalStateException("the warm start compiled: the cache missed");
        }
      }
      System.out.println("trust_ns=" + mb.statistics().trustCheckNanos());
    }
  }
}
