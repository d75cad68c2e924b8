package org.mpibuild.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.concurrent.Callable;
import org.mpibuild.CacheAdmin;
import org.mpibuild.Configuration;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.BackendProvider;
import org.mpibuild.spi.MpiBinding;
import org.mpibuild.spi.Setting;
import org.mpibuild.spi.SettingSource;
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
  private final SettingSource settings;
  /** Every setting of the core, the backends and the bindings, found once. */
  private final List<Setting<?>> all = Configuration.all();
  PrintStream out;

  DoctorCommand() {
    this(SettingSource.ofProcess());
  }

  /** A doctor that reads its settings from {@code settings} (tests). */
  DoctorCommand(SettingSource settings) {
    this.settings = settings;
  }

  @Override
  public Integer call() {
    out = System.out;
    section("java");
    ok(System.getProperty("java.vm.name") + " " + System.getProperty("java.version") + " ("
        + System.getProperty("java.home") + ")");

    section("configuration");
    configuration();

    section("mpi");
    mpi();

    section("backends");
    backends();

    section("cache");
    cache();

    out.println();
    if (problems.isEmpty()) {
      out.println("doctor: everything needed is here");
      return 0;
    }
    out.println("doctor: " + problems.size() + " problem" + (problems.size() == 1 ? "" : "s") + ":");
    problems.forEach(p -> out.println("  " + p));
    return 1;
  }

  /**
   * Every setting of the registry that is set, checked; a bad one is a problem. A name that looks like a
   * setting and is none is warned about, with the nearest setting.
   */
  void configuration() {
    int set = 0;
    for (Setting<?> s : all) {
      String raw = settings.raw(s);
      try {
        s.read(settings);
        if (raw != null && !raw.isBlank()) {
          set++;
          ok(s.variable() + "=" + raw);
        }
      } catch (IllegalArgumentException e) {
        fail(e.getMessage(), "fix or unset " + s.variable() + " (README: Configuration)");
      }
    }
    ok(set + " of " + all.size() + " settings set; the others have their defaults");
    Configuration.misspelt(settings).forEach(this::warn);
  }

  private String raw(String variable) {
    for (Setting<?> s : all) {
      if (s.variable().equals(variable)) {
        String v = settings.raw(s);
        return v == null ? "" : v.trim().toLowerCase(Locale.ROOT);
      }
    }
    return "";
  }

  /**
   * The Slurm job this process runs in, or null outside Slurm: the launcher (srun through PMIx, or a batch
   * script), the job and step ids, the task among the step's tasks, and the job's node list.
   */
  static String slurm(Map<String, String> env) {
    String job = env.get("SLURM_JOB_ID");
    if (job == null) {
      return null;
    }
    String step = env.get("SLURM_STEP_ID");
    String how = step == null ? "Slurm batch script (no step: start ranks with srun or mpirun)"
        : env.containsKey("PMIX_RANK") ? "Slurm's srun through PMIx" : "Slurm's srun";
    StringBuilder b = new StringBuilder(how).append(", job ").append(job);
    if (step != null) {
      b.append(" step ").append(step);
      if (env.containsKey("SLURM_PROCID")) {
        b.append(", task ").append(env.get("SLURM_PROCID")).append(" of ")
            .append(env.getOrDefault("SLURM_STEP_NUM_TASKS", env.getOrDefault("SLURM_NTASKS", "?")));
      }
    }
    b.append(", nodes ").append(env.getOrDefault("SLURM_JOB_NODELIST", env.getOrDefault("SLURM_NODELIST", "?")));
    if (env.containsKey("SLURMD_NODENAME")) {
      b.append(" (this is ").append(env.get("SLURMD_NODENAME")).append(')');
    }
    return b.toString();
  }

  /** The Slurm job this runs in, if any; a warning where srun started several tasks with no MPI plug-in. */
  private void slurmAllocation(boolean launched) {
    String slurm = slurm(System.getenv());
    if (slurm != null) {
      out.println("  slurm:     " + slurm);
      if (System.getenv("SLURM_STEP_ID") != null && !launched && System.getenv("SLURM_STEP_NUM_TASKS") != null
          && !System.getenv("SLURM_STEP_NUM_TASKS").equals("1")) {
        warn("started by srun without an MPI plug-in, so every task would be a job of one rank: use srun "
            + "--mpi=pmix (srun --mpi=list shows what this Slurm offers)");
      }
    }
  }

  private void mpi() {
    Map<String, String> launcher = MpiBinding.launcherVariables(System.getenv());
    boolean launched = !launcher.isEmpty();
    out.println("  launcher:  " + (launched ? launcher : "none (not started by mpirun)"));
    slurmAllocation(launched);
    String launcherVersion = launcherVersion();
    boolean openMpi = launcherVersion != null && isOpenMpi(launcherVersion);
    MpiBinding ffm = MpiBinding.find("ffm");
    String ffmWhy = ffm == null ? "mpi-build-ffm is not on the class path, or this Java ("
        + Runtime.version().feature() + ") cannot load it (Java 22+)" : ffm.unavailable();
    String[] ffmSaid = ffmWhy == null ? persistentCollectives(ffm.describe()) : null;
    MpiBinding mpiJava = MpiBinding.find("mpijava");
    String jarWhy = mpiJava == null ? "mpi-build-mpijava is not on the class path" : mpiJava.unavailable();
    String[] jar = jarWhy == null ? persistentCollectives(mpiJava.describe()) : null;
    boolean needsBinding = launched || raw("MPI_BUILD_MODE").equals("mpi");
    if (jarWhy == null) {
      ok("mpi.jar binding: " + jar[0]);
    } else if (!openMpi && launcherVersion != null) {
      // mpi.jar is Open MPI's; on another MPI its absence is normal, and Open MPI's advice would mislead.
      out.println("  info  mpi.jar binding: not for this MPI (mpi.jar comes only with Open MPI's Java bindings; "
          + launcherVersion + ")" + (ffmWhy == null ? ": the FFM binding serves it" : ""));
      if (ffmWhy != null && needsBinding) {
        fail("no binding can drive this MPI (" + launcherVersion + "), so every rank would build alone",
            "install a JDK 22 or later, run scripts/provision again (or set MPI_BUILD_FFM_JDK) to build the FFM "
                + "binding, and run the ranks on it (MPI_BUILD_JAVA for bin/mpi-build-rank)");
      }
    } else if (needsBinding && ffmWhy == null) {
      out.println("  info  " + jarWhy + ": the FFM binding serves this job");
    } else if (needsBinding) {
      fail(jarWhy + ", so every rank would build alone",
          "launch ranks with bin/mpi-build-rank or 'mpirun ... java' (which add Open MPI's mpi.jar), or run "
              + "scripts/provision to build mpi.jar");
    } else {
      out.println("  info  " + jarWhy + ": local mode (bin/mpi-build-rank adds mpi.jar under mpirun)");
    }
    if (ffmWhy == null) {
      ok("FFM binding: " + ffmSaid[0]);
    } else {
      out.println("  info  FFM binding unavailable: " + ffmWhy);
    }
    String choice = raw("MPI_BUILD_BINDING");
    choice = choice.isEmpty() ? "auto" : choice;
    out.println("  binding:   " + (choice.equals("auto") ? "auto: " : choice + " (MPI_BUILD_BINDING): ")
        + bindingInUse(choice, jarWhy == null, ffmWhy == null));
    boolean jarInUse = choice.equals("mpijava") || !choice.equals("ffm") && ffmWhy != null;
    out.println("  persistent collectives: " + persistentLine(jarInUse ? "mpi.jar" : "FFM", jarInUse ? jar : ffmSaid));
    if (launcherVersion != null) {
      ok("launcher: " + launcherVersion);
    } else {
      warn("no MPI launcher (mpirun or mpiexec) on the PATH: only local builds (install an MPI or load its module;"
          + " on Debian, scripts/provision installs Open MPI)");
    }
  }

  /**
   * The MPI launcher on the PATH (mpirun, else mpiexec) in words, from its {@code --version}: "mpirun (Open MPI)
   * 4.1.4", or "mpiexec: MPICH's Hydra 4.0.2"; null if neither runs.
   */
  private static String launcherVersion() {
    for (String launcher : List.of("mpirun", "mpiexec")) {
      String said = output(launcher, "--version");
      if (said != null && !said.isBlank()) {
        return describeLauncher(launcher, said);
      }
    }
    return null;
  }

  /** A launcher's {@code --version} output in one line (Hydra's first line says only "HYDRA build details:"). */
  static String describeLauncher(String launcher, String versionOutput) {
    List<String> lines = versionOutput.lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
    if (!lines.isEmpty() && lines.get(0).startsWith("HYDRA")) {
      String version = lines.stream().filter(l -> l.startsWith("Version:")).findFirst()
          .map(l -> l.substring("Version:".length()).strip()).orElse("(version not given)");
      return launcher + ": MPICH's Hydra " + version;
    }
    return lines.isEmpty() ? launcher : lines.get(0);
  }

  /** Whether a launcher's line is Open MPI's (mpirun 4 says "(Open MPI)", 5 and later "(Open MPI)" or prterun). */
  static boolean isOpenMpi(String launcherLine) {
    return launcherLine.contains("Open MPI") || launcherLine.contains("OpenRTE") || launcherLine.contains("prterun")
        || launcherLine.contains("PRRTE");
  }

  /**
   * The binding a build would use, as the library chooses it: the one {@code MPI_BUILD_BINDING} names, else
   * FFM where it runs, else mpi.jar.
   */
  static String bindingInUse(String choice, boolean jarRuns, boolean ffmRuns) {
    return switch (choice) {
      case "mpijava" -> jarRuns ? "mpi.jar" : "local mode (the mpi.jar binding is unavailable)";
      case "ffm" -> ffmRuns ? "FFM" : "none: the FFM binding cannot run here, so a build fails (unless MPI_BUILD_MODE=local)";
      default -> ffmRuns ? "FFM, unless the program initialized MPI through mpi.jar"
          : jarRuns ? "mpi.jar (the FFM binding is unavailable)" : "local mode (no binding usable)";
    };
  }

  /** What every binding's {@link MpiBinding#describe} says of its persistent collectives, after the rest. */
  static final String PERSISTENT = "; persistent collectives: ";

  /**
   * Splits a binding's description into what it talks to and the persistent collectives it names, which
   * the bindings tell without initializing MPI (the FFM binding from the library's exported functions).
   *
   * @return the description without that clause, and the clause's text or null if it has none
   */
  static String[] persistentCollectives(String describe) {
    int at = describe.indexOf(PERSISTENT);
    if (at < 0) {
      return new String[] {describe, null};
    }
    int from = at + PERSISTENT.length();
    int end = describe.indexOf("; ", from);
    String what = describe.substring(from, end < 0 ? describe.length() : end);
    return new String[] {describe.substring(0, at) + (end < 0 ? "" : describe.substring(end)), what};
  }

  /**
   * The doctor's line on the persistent collectives of the binding in use ({@code split} from
   * {@link #persistentCollectives}, or null where that binding cannot run): which ones, or none and what a
   * stream-ordered collective uses instead.
   */
  static String persistentLine(String binding, String[] split) {
    if (split == null) {
      return "none (no MPI binding in use)";
    }
    return (split[1] == null ? "not said by the binding" : split[1]) + " (" + binding + " binding)";
  }

  private void backends() {
    List<BackendProvider> providers = new ArrayList<>();
    ServiceLoader.load(BackendProvider.class, getClass().getClassLoader()).forEach(providers::add);
    int usable = 0;
    String wantedId = raw("MPI_BUILD_BACKEND");
    wantedId = wantedId.isEmpty() ? null : wantedId;
    boolean wantedUsable = wantedId == null;
    for (BackendProvider p : providers) {
      try (Backend b = p.open(settings)) {
        usable++;
        wantedUsable |= p.id().equals(wantedId);
        ok(p.id() + ": device [" + b.target() + "]");
        out.println("        compiler: " + b.compilerIdentity());
        if (p.id().equals("cuda")) {
          cudaCode(b);
        }
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
      fail("no backend can run here", "act on the reasons listed above for each backend (each names what it "
          + "could not load or find)");
    } else if (!wantedUsable) {
      fail("backend '" + wantedId + "' (MPI_BUILD_BACKEND) is not usable here",
          "choose one of the backends listed above");
    }
  }

  /**
   * CUDA: the architectures a build carries as SASS, and whether this rank's GPU runs one of them or would
   * JIT-compile PTX at every load instead (only when MPI_BUILD_CUDA_ARCH names architectures without it).
   * Asks the backend only through its SPI: a one-architecture target it can load is SASS it runs.
   */
  private void cudaCode(Backend b) {
    String mine = b.target();
    String carried;
    try {
      carried = b.buildTarget(List.of(mine));
    } catch (RuntimeException e) {
      out.println("        sass: unknown (" + e.getMessage() + ")");
      return;
    }
    if (b.buildsForJobTargets()) {
      out.println("        sass: a build carries SASS for every GPU architecture of the job (here " + carried
          + "): no rank JIT-compiles PTX");
      return;
    }
    String what = "a build carries SASS for " + carried + " (MPI_BUILD_CUDA_ARCH)";
    String fix = "add " + mine + " to MPI_BUILD_CUDA_ARCH, or unset it to build for the job's GPUs";
    if (mine.equals("none")) {
      out.println("        sass: " + what + "; this rank has no GPU");
    } else if (Arrays.stream(carried.split(",")).anyMatch(b::canLoad)) {
      out.println("        sass: " + what + ": this GPU (" + mine + ") runs SASS, without JIT");
    } else if (b.canLoad(carried)) {
      warn("cuda: " + what + ", none for this GPU (" + mine + "): it would JIT-compile the build's PTX at every"
          + " load; " + fix);
    } else {
      fail("cuda: " + what + ": this GPU (" + mine + ") can run neither that SASS nor its PTX", fix);
    }
  }

  private void cache() {
    Optional<Path> configured;
    boolean readOnly;
    try {
      configured = CacheAdmin.configuredDirectory();
      readOnly = CacheAdmin.configuredReadOnly();
    } catch (IllegalArgumentException e) {
      return; // reported under configuration
    }
    if (configured.isEmpty()) {
      out.println("  info  the persistent cache is off (MPI_BUILD_CACHE=off)");
      return;
    }
    Path dir = configured.get();
    out.println("  directory: " + dir + (readOnly ? " (read-only)" : " (on)"));
    Path key = CacheAdmin.signingKey();
    Path trusted = CacheAdmin.trustedKeys();
    out.println("  signing key: " + key + (Files.exists(key) ? "" : " (made on the first write)")
        + "; other keys you trust: " + (Files.exists(trusted) ? trusted.toString() : "none (mpi-build cache trust FILE)"));
    if (Files.exists(dir.resolve("trusted-keys"))) {
      out.println("  info  " + dir.resolve("trusted-keys") + " is not read: only your own trusted keys count; to trust "
          + "the keys it lists, check them, then run: mpi-build cache trust " + dir.resolve("trusted-keys"));
    }
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
      String unsafe = CacheAdmin.unsafeReason(dir).orElse(null);
      CacheAdmin cache = CacheAdmin.open(dir, false);
      List<CacheAdmin.Entry> all = cache.list();
      long bytes = all.stream().mapToLong(CacheAdmin.Entry::bytes).sum();
      long corrupt = all.stream().filter(l -> l.problem().isPresent()).count();
      ok(all.size() + " entries, " + CacheCommand.human(bytes) + " of " + CacheCommand.human(cache.maxBytes())
          + (corrupt > 0 ? ", " + corrupt + " corrupt (bin/mpi-build cache verify --remove)" : ""));
      if (unsafe != null && !readOnly) {
        fail("writes refused: " + unsafe, "chmod 700 " + dir + ", or MPI_BUILD_CACHE_SHARED=1 for a group cache");
      }
    } catch (IOException | IllegalStateException e) {
      fail("cannot read " + dir + ": " + e.getMessage(), "check the directory's permissions");
    }
  }

  /** What a command prints (stdout and stderr together), or null if it cannot be started. */
  private static String output(String... command) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      p.waitFor();
      return text;
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
