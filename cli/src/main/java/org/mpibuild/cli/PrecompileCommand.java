package org.mpibuild.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.MpiBuildBuilder;
import org.mpibuild.PrecompileResult;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code mpi-build precompile MANIFEST}: builds every recorded request into the kernel cache, so that the
 * production run starts warm. Alone it compiles locally; under mpirun the compiles are spread over the
 * ranks. Rank 0 prints a progress bar on a terminal (a line per kernel otherwise) and a final table.
 * Exit code 1 if any entry failed; the failures are listed with their logs.
 */
@Command(name = "precompile", mixinStandardHelpOptions = true,
    description = {"Build every kernel of a manifest (recorded with MPI_BUILD_RECORD) into the cache.",
        "Alone it compiles locally; under mpirun (bin/mpi-build precompile -np N ...) the compiles are spread "
            + "over the ranks. Exit codes: 0 every entry built or cached, 1 some entry failed, 2 usage."})
final class PrecompileCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "MANIFEST", description = "the manifest file")
  Path manifest;

  @picocli.CommandLine.Mixin
  CacheCommand.DirOption cache;

  @Option(names = "--backend", paramLabel = "ID", description = "backend id (default: MPI_BUILD_BACKEND, else automatic)")
  String backend;

  @Option(names = "--batch-ranks", paramLabel = "N", description = "compile on at most N ranks (default: every rank)")
  Integer batchRanks;

  @Option(names = "--no-progress", description = "plain log lines even on a terminal")
  boolean noProgress;

  @Override
  public Integer call() {
    List<ManifestReader.Entry> entries = ManifestReader.read(manifest);
    MpiBuildBuilder b = MpiBuild.builder();
    if (cache.dir != null) {
      b.cacheDirectory(cache.dir);
    }
    if (backend != null) {
      b.backend(backend);
    }
    if (batchRanks != null) {
      b.batchRanks(batchRanks);
    }
    try (MpiBuild build = b.build()) {
      boolean talk = build.rank() == 0;
      PrintStream out = System.out;
      List<KernelSource> requests = new ArrayList<>();
      List<ManifestReader.Entry> skipped = new ArrayList<>();
      List<ManifestReader.Entry> used = new ArrayList<>();
      for (ManifestReader.Entry e : entries) {
        if (!e.backend().isEmpty() && !e.backend().equals(build.backend())) {
          skipped.add(e);
        } else {
          used.add(e);
          requests.add(e.request());
        }
      }
      if (talk) {
        out.printf(Locale.ROOT, "precompile: %d entries from %s with %s on %s, cache %s%n", requests.size(), manifest,
            build.backend(), build.communicator(), build.cacheDirectory().map(Object::toString).orElse("off"));
        if (build.cacheDirectory().isEmpty()) {
          out.println("precompile: warning: the cache is off (MPI_BUILD_CACHE=off): nothing will be kept");
        }
      }
      Progress progress = talk ? new Progress(requests.size(), System.console() != null && !noProgress, out) : null;
      List<PrecompileResult> results = build.precompile(requests, progress == null ? null : progress::arrived);
      if (progress != null) {
        progress.finish();
      }
      if (!talk) {
        return results.stream().allMatch(PrecompileResult::ok) ? 0 : 1;
      }
      return report(results, used, skipped, out);
    }
  }

  private int report(List<PrecompileResult> results, List<ManifestReader.Entry> used, List<ManifestReader.Entry> skipped,
      PrintStream out) {
    long compiled = results.stream().filter(r -> r.outcome() == PrecompileResult.Outcome.COMPILED).count();
    long cached = results.stream().filter(r -> r.outcome() == PrecompileResult.Outcome.CACHED).count();
    List<PrecompileResult> failed = results.stream().filter(r -> !r.ok()).toList();
    out.println();
    out.println("  outcome    entries");
    out.printf(Locale.ROOT, "  compiled   %7d%n  cached     %7d%n  failed     %7d%n  skipped    %7d%n", compiled, cached,
        failed.size(), skipped.size());
    for (ManifestReader.Entry e : skipped) {
      out.printf(Locale.ROOT, "skipped: line %d, kernels %s: recorded for backend '%s'%n", e.line(),
          e.request().kernelNames(), e.backend());
    }
    for (PrecompileResult r : failed) {
      ManifestReader.Entry e = used.get(r.index());
      out.printf(Locale.ROOT, "%nFAILED: line %d of %s, kernels %s, options '%s'%n  %s%n", e.line(), manifest,
          r.request().kernelNames(), r.request().options(), r.error());
      if (!r.buildLog().isBlank()) {
        out.println("  --- build log ---");
        r.buildLog().lines().forEach(l -> out.println("  " + l));
      }
    }
    return failed.isEmpty() ? 0 : 1;
  }

  /** A bar on a terminal, else one line per kernel. */
  private static final class Progress {
    private final int total;
    private final boolean bar;
    private final PrintStream out;
    private int done;
    private int failed;

    Progress(int total, boolean bar, PrintStream out) {
      this.total = total;
      this.bar = bar;
      this.out = out;
    }

    void arrived(PrecompileResult r) {
      done++;
      failed += r.ok() ? 0 : 1;
      if (bar) {
        int width = 30;
        int filled = total == 0 ? width : done * width / total;
        out.printf(Locale.ROOT, "\r[%s%s] %d/%d%s", "#".repeat(filled), ".".repeat(width - filled), done, total,
            failed > 0 ? " (" + failed + " failed)" : "");
        out.flush();
      } else {
        out.printf(Locale.ROOT, "precompile: [%d/%d] kernels %s %s (rank %d, %d bytes)%n", done, total,
            r.request().kernelNames(), r.ok() ? "ok" : "FAILED", r.rank(), r.binaryBytes());
      }
    }

    void finish() {
      if (bar) {
        out.println();
      }
    }
  }
}
