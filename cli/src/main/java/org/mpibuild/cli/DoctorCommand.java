package org.mpibuild.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.Callable;
import org.mpibuild.internal.Config;
import org.mpibuild.internal.MpiBindings;
import org.mpibuild.internal.Settings;
import org.mpibuild.internal.cache.CacheSettings;
import org.mpibuild.internal.cache.KernelCache;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.BackendProvider;
import picocli.CommandLine.Command;

/**
 * {@code mpi-build doctor}: what the library sees on this machine, and how to fix what is missing. Never
 * initializes MPI. Exit code 1 if something a build needs is missing.
 */
@Command(name = "doctor", mixinStandardHelpOptions = true,
    description = {"Print what mpi-build sees here: configuration, MPI binding and launcher, backends and devices,",
        "compilers, the kernel cache. Exit codes: 0 usable, 1 something needed is missing (the fix is printed)."})
final class DoctorCommand implements Callable<Integer> {
  private final List<String> problems = new ArrayList<>();
  private PrintStream out;

  @Override
  public Integer call() {
    out = System.out;
    section("java");
    ok(System.getProperty("java.vm.name") + " " + System.getProperty("java.version") + " ("
        + System.getProperty("java.home") + ")");

    section("configuration");
    Settings settings = null;
    try {
      settings = Settings.fromEnvironment();
      ok("mode " + settings.mode().name().toLowerCase(Locale.ROOT) + ", backend "
          + (settings.backend() == null ? "automatic" : settings.backend()) + ", compile timeout "
          + settings.compileTimeout().toSeconds() + " s, async progress "
          + settings.progress().name().toLowerCase(Locale.ROOT) + ", batch ranks "
          + (settings.batchRanks() == 0 ? "all" : settings.batchRanks())
          + (settings.record() == null ? "" : ", recording to " + settings.record()));
    } catch (IllegalArgumentException e) {
      fail(e.getMessage(), "fix or unset the setting named above (README: Configuration)");
    }

    section("mpi");
    mpi(settings);

    section("backends");
    backends();

    section("cache");
    cache(settings);

    out.println();
    if (problems.isEmpty()) {
      out.println("doctor: everything needed is here");
      return 0;
    }
    out.println("doctor: " + problems.size() + " problem" + (problems.size() == 1 ? "" : "s") + ":");
    problems.forEach(p -> out.println("  " + p));
    return 1;
  }

  private void mpi(Settings settings) {
    Map<String, String> launcher = MpiBindings.launcherVariables(System.getenv());
    boolean launched = !launcher.isEmpty();
    out.println("  launcher:  " + (launched ? launcher : "none (not started by mpirun)"));
    String jar = MpiBindings.mpiJarLocation();
    if (jar != null) {
      ok("mpi.jar binding: " + jar);
    } else if (launched || (settings != null && settings.mode() == Settings.Mode.MPI)) {
      fail("mpi.jar is not on the class path, so every rank would build alone",
          "launch ranks with bin/mpi-build-rank or 'mpirun ... java' (which add Open MPI's mpi.jar), or run "
              + "scripts/provision to build mpi.jar");
    } else {
      out.println("  info  mpi.jar is not on the class path: local mode (bin/mpi-build-rank adds it under mpirun)");
    }
    org.mpibuild.spi.MpiBinding ffm = MpiBindings.ffm();
    String ffmWhy = ffm == null ? "mpi-build-ffm is not on the class path, or this Java ("
        + Runtime.version().feature() + ") cannot load it (Java 22+)" : ffm.unavailable();
    if (ffmWhy == null) {
      ok("FFM binding: " + ffm.describe());
    } else {
      out.println("  info  FFM binding unavailable: " + ffmWhy);
    }
    String choice;
    try {
      choice = Config.ofProcess().string("mpibuild.binding", "MPI_BUILD_BINDING", "auto");
    } catch (RuntimeException e) {
      choice = "auto";
    }
    out.println("  binding:   " + (choice.equals("auto") ? "auto: " : choice + " (MPI_BUILD_BINDING): ")
        + (ffmWhy == null ? "FFM, unless the program initialized MPI through mpi.jar"
            : jar != null ? "mpi.jar (the FFM binding is unavailable)" : "local mode (no binding usable)"));
    String version = firstLine("mpirun", "--version");
    if (version != null) {
      ok("mpirun: " + version);
    } else {
      warn("mpirun not found on the PATH: only local builds (install Open MPI: scripts/provision)");
    }
  }

  private void backends() {
    List<BackendProvider> providers = new ArrayList<>();
    ServiceLoader.load(BackendProvider.class, getClass().getClassLoader()).forEach(providers::add);
    int usable = 0;
    String wantedId = Config.ofProcess().string("mpibuild.backend", "MPI_BUILD_BACKEND", "").trim();
    wantedId = wantedId.isEmpty() ? null : wantedId;
    boolean wantedUsable = wantedId == null;
    for (BackendProvider p : providers) {
      try (Backend b = p.open()) {
        usable++;
        wantedUsable |= p.id().equals(wantedId);
        ok(p.id() + ": device [" + b.target() + "]");
        out.println("        compiler: " + b.compilerIdentity());
      } catch (RuntimeException | LinkageError e) {
        boolean wanted = p.id().equals(wantedId);
        String why = e.getMessage() == null ? e.toString() : e.getMessage();
        if (wanted) {
          fail(p.id() + ": " + why, "MPI_BUILD_BACKEND asks for " + p.id() + "; install what it needs or choose another");
        } else {
          warn(p.id() + ": " + why);
        }
      }
    }
    if (providers.isEmpty()) {
      fail("no backend on the class path", "add mpi-build-opencl or mpi-build-cuda to the class path");
    } else if (usable == 0) {
      fail("no backend can run here", "install an OpenCL driver (apt install pocl-opencl-icd, as scripts/provision "
          + "does) or a CUDA driver and GPU");
    } else if (!wantedUsable) {
      fail("backend '" + wantedId + "' (MPI_BUILD_BACKEND) is not usable here",
          "choose one of the backends listed above");
    }
  }

  private void cache(Settings settings) {
    CacheSettings c = settings != null ? settings.cache() : CacheSettings.from(Config.ofProcess());
    if (c.access() == CacheSettings.Access.OFF) {
      out.println("  info  the persistent cache is off (MPI_BUILD_CACHE=off)");
      return;
    }
    Path dir = c.dir();
    out.println("  directory: " + dir + " (" + c.access().name().toLowerCase(Locale.ROOT) + ")");
    if (!Files.exists(dir)) {
      Path parent = dir.toAbsolutePath().getParent();
      while (parent != null && !Files.exists(parent)) {
        parent = parent.getParent();
      }
      if (parent != null && Files.isWritable(parent)) {
        ok("not created yet; the first build creates it (mode 0700)");
      } else {
        fail("cannot create " + dir + " (" + parent + " is not writable)",
            "set MPI_BUILD_CACHE_DIR to a writable directory, or MPI_BUILD_CACHE=off");
      }
      return;
    }
    try {
      String unsafe = KernelCache.unsafeReason(dir, c.shared());
      KernelCache cache = KernelCache.open(c.withAccess(CacheSettings.Access.READ_ONLY));
      List<KernelCache.Listing> all = cache == null ? List.of() : cache.list();
      long bytes = all.stream().mapToLong(KernelCache.Listing::bytes).sum();
      long corrupt = all.stream().filter(l -> l.problem() != null).count();
      ok(all.size() + " entries, " + CacheCommand.human(bytes) + " of " + CacheCommand.human(c.maxBytes())
          + (corrupt > 0 ? ", " + corrupt + " corrupt (bin/mpi-build cache verify --remove)" : ""));
      if (unsafe != null && c.access() == CacheSettings.Access.ON) {
        fail("writes refused: " + unsafe, "chmod 700 " + dir + ", or MPI_BUILD_CACHE_SHARED=1 for a group cache");
      }
    } catch (IOException e) {
      fail("cannot read " + dir + ": " + e.getMessage(), "check the directory's permissions");
    }
  }

  private static String firstLine(String... command) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      String text = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      p.waitFor();
      return text.lines().filter(l -> !l.isBlank()).findFirst().orElse("").trim();
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  private void section(String name) {
    out.println(name + ":");
  }

  private void ok(String what) {
    out.println("  ok    " + what);
  }

  private void warn(String what) {
    out.println("  warn  " + what);
  }

  private void fail(String what, String fix) {
    out.println("  FAIL  " + what);
    out.println("        fix: " + fix);
    problems.add(what + " (fix: " + fix + ")");
  }
}
