package org.mpibuild.opencl;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.mpibuild.CompileException;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;
import org.mpibuild.support.BackendSupport;

/**
 * Finished machine code for named launch shapes on PoCL.
 *
 * <p>PoCL (3.1, {@code lib/CL/devices/common_driver.c}) makes a program binary from the generic
 * work-group function of each kernel plus the specializations named in {@code POCL_BINARY_SPECIALIZE_WG};
 * every other specialization (a local size, a zero global offset, a "small grid") is generated at the
 * kernel's first launch of that shape, on every rank that loads the binary. PoCL reads that variable
 * through {@code getenv} and keeps the first value it finds for the life of the process
 * ({@code pocl_runtime_config.c}), and it applies every named specialization to every kernel of the
 * program. So the compile runs in a short-lived child process of this backend's own classes, with the
 * variable set to the request's shapes; the parent loads the binary it writes. The child builds only the named
 * (kernel, shape) pairs: it gives PoCL stand-ins for every other work-group function, the generic ones
 * included, and removes them from the binary ({@link PoclCompileProcess}), so that the compile costs what a rank that
 * builds for itself pays for its first launches (the front end and the named functions). The files live in a
 * private directory, PoCL's cache of the compile included, that is deleted afterwards.
 */
final class PoclSpecialization {
  /** The name PoCL's platform reports. */
  static final String PLATFORM_NAME = "Portable Computing Language";
  /** PoCL's large-grid limit for CPU devices: {@code grid_width_specialization_limit = USHRT_MAX}. */
  static final long SMALL_GRID_LIMIT = 65_535;

  /** The parent's system properties the child gets: where its native libraries go and are found. */
  static final List<String> INHERITED_PROPERTIES = List.of("java.io.tmpdir", "java.library.path");
  /** Environment variables every JVM reads its options from, which the child does not inherit. */
  static final List<String> JVM_OPTION_VARIABLES = List.of("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS");

  /** The compile process's exits: the source does not compile, invalid options, too many stand-ins. */
  static final int EXIT_COMPILE_FAILED = 10;
  static final int EXIT_INVALID_OPTIONS = 11;
  static final int EXIT_TOO_MANY_STAND_INS = 12;
  /** A compile process started ahead could not build the request's shapes (the reason in its {@code error}). */
  static final int EXIT_NOT_HERE = 13;
  /** A compile process started ahead whose warm-up found no idle time to finish in. */
  static final int EXIT_NOT_WARM = 14;

  /** What the child built: the binary and the build log. */
  record Result(byte[] binary, String buildLog) {}

  private PoclSpecialization() {}

  /**
   * PoCL's names of the specializations of {@code shapes}, as its cache directories spell them: the local
   * size in three dimensions, {@code -goffs0} for a zero global offset, {@code -smallgrid} when every
   * dimension of the grid is below PoCL's limit (a grid left open is taken to be small). Distinct, in order.
   */
  static List<String> names(List<LaunchShape> shapes) {
    Set<String> out = new LinkedHashSet<>();
    for (LaunchShape s : shapes) {
      long[] local = s.localSize();
      long[] l = {1, 1, 1};
      System.arraycopy(local, 0, l, 0, local.length);
      StringBuilder name = new StringBuilder().append(l[0]).append('-').append(l[1]).append('-').append(l[2]);
      if (s.zeroOffset()) {
        name.append("-goffs0");
      }
      if (smallGrid(s, l)) {
        name.append("-smallgrid");
      }
      out.add(name.toString());
    }
    return List.copyOf(out);
  }

  /**
   * Whether PoCL takes the launch for a small grid: its widest dimension, as PoCL 3.1's
   * {@code pocl_cmd_max_grid_dim_width} computes it (the third term is the local size squared there), is
   * below the limit.
   */
  private static boolean smallGrid(LaunchShape s, long[] local) {
    long[] global = s.globalSize();
    if (global.length == 0) {
      return true;
    }
    long x = global[0];
    long y = global.length > 1 ? global[1] : local[1];
    long widest = Math.max(Math.max(x, y), local[2] * local[2]);
    return widest < SMALL_GRID_LIMIT;
  }

  /**
   * Compiles {@code request} on the device at the given indexes in a child process whose PoCL builds the
   * request's launch shapes into the binary.
   *
   * @throws CompileException with the build log if the compiler rejects the source
   * @throws IllegalArgumentException if the options are invalid
   * @throws IllegalStateException if the child cannot run, or is interrupted (a compile timeout): then it
   *     is killed
   */
  static Result compile(KernelSource request, int platformIndex, int deviceIndex) {
    return compile(request, platformIndex, deviceIndex, false);
  }

  /**
   * {@link #compile(KernelSource, int, int)}, in the process started ahead for the device where {@code spare} and one
   * waits ({@link SpareCompileProcess}: for a backend that wanted one).
   */
  static Result compile(KernelSource request, int platformIndex, int deviceIndex, boolean spare) {
    return compile(request, perKernel(request.launchShapes()), platformIndex, deviceIndex, MAX_STAND_INS, List.of(),
        spare);
  }

  /** The binary being made in the background ({@link #later}), if any: one at a time per process. */
  private static final AtomicReference<FutureTask<byte[]>> BACKGROUND = new AtomicReference<>();
  private static final Semaphore BACKGROUND_SLOT = new Semaphore(1);
  private static final AtomicBoolean EXIT_HOOK = new AtomicBoolean();

  /**
   * Reserves the one background compile of this process for {@link #later}; false if another binary is being
   * made (the caller then compiles as at more ranks). {@link #releaseReservation} gives it back unused.
   */
  static boolean reserveBackground() {
    return BACKGROUND_SLOT.tryAcquire();
  }

  static void releaseReservation() {
    BACKGROUND_SLOT.release();
  }

  /**
   * {@link #compile(KernelSource, int, int)} on a thread of its own, for a program already built in this process,
   * with the reservation {@link #reserveBackground} took (given back when it ends). Cancelling the future with
   * interruption kills its process; so does the JVM's exit, so that no compile process outlives the program.
   */
  static Future<byte[]> later(KernelSource request, int platformIndex, int deviceIndex) {
    FutureTask<byte[]> task = new FutureTask<>(() -> {
      try {
        // Nobody waits for it: it runs at the idle priority, in the time the program leaves unused.
        return compile(request, platformIndex, deviceIndex, MAX_STAND_INS, IdlePriority.prefix()).binary();
      } finally {
        BACKGROUND.set(null);
        BACKGROUND_SLOT.release();
      }
    });
    BACKGROUND.set(task);
    if (EXIT_HOOK.compareAndSet(false, true)) {
      try {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
          FutureTask<byte[]> running = BACKGROUND.get();
          if (running != null) {
            running.cancel(true); // the compile process is killed and its directory deleted
          }
        }, "mpi-build-pocl-binary-exit"));
      } catch (IllegalStateException exiting) {
        // the JVM is already exiting: the compile process below ends with it or on its own
      }
    }
    Thread t = new Thread(task, "mpi-build-pocl-binary");
    t.setDaemon(true);
    t.start();
    return task;
  }

  /**
   * Stand-ins one compile process may use (a kernel's generic function and each shape it did not name). PoCL
   * packs every one of them into the binary before they are removed, in a buffer of {@code MAX_BINARY_SIZE}
   * (256 MiB in 3.1 to 7.1, {@code pocl_binary.c}) that it does not check as it writes: 200 kernels with a shape
   * each would need 40,000 (540 MB) and corrupt PoCL's heap. At about 14 KB each, 8192 take 112 MiB.
   */
  static final int MAX_STAND_INS = 8192;

  /**
   * {@link #compile(KernelSource, int, int)} with {@code maxStandIns} stand-ins per compile process: where the
   * program's kernels times the shapes need more, the shapes are split into groups that each need fewer, a
   * process builds each group's named functions, and their binaries are combined ({@link PoclBinary#combine}).
   * Each process runs under {@code launcher}, a prefix of its argument list (empty, or {@link IdlePriority#prefix}).
   */
  static Result compile(KernelSource request, int platformIndex, int deviceIndex, int maxStandIns,
      List<String> launcher) {
    return compile(request, perKernel(request.launchShapes()), platformIndex, deviceIndex, maxStandIns, launcher,
        false);
  }

  /**
   * The parts of a compile shared between up to {@code ranks} ranks: the request's (kernel, specialization) pairs
   * dealt in turn, each part a line {@code KERNEL\tSPECIALIZATION} per pair; none where there are fewer than two
   * pairs. Each part's process pays the front end again; the named functions are what it divides.
   */
  static List<String> parts(KernelSource request, int ranks) {
    List<String> pairs = new ArrayList<>();
    perKernel(request.launchShapes()).forEach((kernel, specs) -> specs.forEach(spec -> pairs.add(pair(kernel, spec))));
    int n = Math.min(ranks, pairs.size());
    if (n < 2) {
      return List.of();
    }
    List<StringBuilder> parts = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      parts.add(new StringBuilder());
    }
    for (int i = 0; i < pairs.size(); i++) {
      parts.get(i % n).append(pairs.get(i));
    }
    return parts.stream().map(StringBuilder::toString).toList();
  }

  /**
   * {@link #compile(KernelSource, int, int)} of one part of {@link #parts}, its pairs as {@link #part} reads them: a
   * binary with that part's named functions and no others.
   */
  static Result compilePart(KernelSource request, Map<String, Set<String>> part, int platformIndex, int deviceIndex,
      boolean spare) {
    return compile(request, part, platformIndex, deviceIndex, MAX_STAND_INS, List.of(), spare);
  }

  /**
   * The (kernel, specialization) pairs of {@code part}, one of {@link #parts}, by kernel.
   *
   * @throws IllegalArgumentException if {@code part} names a pair that is not a launch shape of the request
   */
  static Map<String, Set<String>> part(KernelSource request, String part) {
    Map<String, Set<String>> all = perKernel(request.launchShapes());
    Map<String, Set<String>> mine = pairs(part);
    mine.forEach((kernel, specs) -> specs.forEach(spec -> {
      if (!all.getOrDefault(kernel, Set.of()).contains(spec)) {
        throw new IllegalArgumentException("part of a shared compile names '" + kernel + " " + spec
            + "', which is not a launch shape of the request");
      }
    }));
    return mine;
  }

  /** One (kernel, specialization) pair as a part and the compile process's {@code named} file write it. */
  static String pair(String kernel, String specialization) {
    return kernel + '\t' + specialization + '\n';
  }

  /** The pairs of a text of {@link #pair} lines, by kernel, in order. */
  static Map<String, Set<String>> pairs(String text) {
    Map<String, Set<String>> out = new LinkedHashMap<>();
    for (String line : text.split("\n")) {
      if (line.isEmpty() || line.startsWith("#")) { // a line of another kind: PoclInProcessCompile.FrontEnd
        continue;
      }
      int tab = line.indexOf('\t');
      out.computeIfAbsent(tab < 0 ? line : line.substring(0, tab), k -> new LinkedHashSet<>())
          .add(tab < 0 ? "" : line.substring(tab + 1));
    }
    return out;
  }

  /** The compile of the (kernel, specialization) pairs {@code perKernel} names. */
  private static Result compile(KernelSource request, Map<String, Set<String>> perKernel, int platformIndex,
      int deviceIndex, int maxStandIns, List<String> launcher, boolean spare) {
    Path dir = null;
    try {
      dir = Files.createTempDirectory("mpi-build-pocl", PosixFilePermissions.asFileAttribute(
          PosixFilePermissions.fromString("rwx------")));
      List<String> union = union(perKernel);
      Result whole = attempt(dir.resolve("all"), request, platformIndex, deviceIndex, union, perKernel, maxStandIns,
          launcher, spare);
      if (whole != null) {
        return whole;
      }
      int kernels = Integer.parseInt(read(dir.resolve("all").resolve("kernels")).strip());
      int group = Math.max(1, maxStandIns / kernels - 1);
      List<byte[]> binaries = new ArrayList<>();
      String log = null;
      for (int from = 0; from < union.size(); from += group) {
        List<String> part = union.subList(from, Math.min(union.size(), from + group));
        Result r = attempt(dir.resolve("part-" + from), request, platformIndex, deviceIndex, part, perKernel,
            Integer.MAX_VALUE, launcher, false);
        binaries.add(r.binary());
        log = log == null ? r.buildLog() : log;
      }
      return new Result(PoclBinary.combine(binaries), log);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot run the PoCL compile process: " + e.getMessage(), e);
    } finally {
      if (dir != null) {
        try {
          BackendSupport.deleteTree(dir);
        } catch (IOException ignored) {
          // a private temporary directory; nothing else to do
        }
      }
    }
  }

  /**
   * One compile process in {@code dir} building the named functions of the shapes {@code part}; null when it
   * found that the program's kernels times {@code part} need more than {@code maxStandIns} stand-ins (it then
   * wrote the number of kernels to {@code dir/kernels}).
   */
  private static Result attempt(Path dir, KernelSource request, int platformIndex, int deviceIndex, List<String> part,
      Map<String, Set<String>> perKernel, int maxStandIns, List<String> launcher, boolean spare) throws IOException {
    Files.createDirectory(dir);
    Files.writeString(dir.resolve("source.cl"), request.source());
    Files.writeString(dir.resolve("options"), request.options());
    StringBuilder named = new StringBuilder();
    perKernel.forEach((kernel, specs) -> specs.stream().filter(part::contains).forEach(
        spec -> named.append(pair(kernel, spec))));
    Files.writeString(dir.resolve("named"), named);
    if (!run(dir, platformIndex, deviceIndex, String.join(",", part), maxStandIns, launcher, spare)) {
      return null;
    }
    return new Result(Files.readAllBytes(dir.resolve("program.bin")), read(dir.resolve("build.log")));
  }

  /** Every specialization {@code perKernel} names, each once, in order: what PoCL is asked to build for every kernel. */
  static List<String> union(Map<String, Set<String>> perKernel) {
    return List.copyOf(perKernel.values().stream().flatMap(Set::stream)
        .collect(java.util.stream.Collectors.toCollection(LinkedHashSet::new)));
  }

  /** The specialization names of each kernel's own shapes. */
  static Map<String, Set<String>> perKernel(List<LaunchShape> shapes) {
    Map<String, Set<String>> out = new LinkedHashMap<>();
    for (LaunchShape s : shapes) {
      out.computeIfAbsent(s.kernel(), k -> new LinkedHashSet<>()).addAll(names(List.of(s)));
    }
    return out;
  }

  /**
   * Runs the child in {@code dir}, with {@code POCL_BINARY_SPECIALIZE_WG} set to {@code specializations}: where
   * {@code ahead}, the compile process started ahead for this device, if one waits ({@link SpareCompileProcess});
   * else a new one with PoCL's cache in {@code dir/pocl}.
   */
  private static boolean run(Path dir, int platformIndex, int deviceIndex, String specializations, int maxStandIns,
      List<String> launcher, boolean ahead) throws IOException {
    try {
      return run(dir, platformIndex, deviceIndex, specializations, maxStandIns, launcher, ahead
          ? SpareCompileProcess.take(platformIndex, deviceIndex, PoclCompileProcess.request(dir, maxStandIns,
              specializations)) : null);
    } finally {
      if (ahead) {
        SpareCompileProcess.replenish(platformIndex, deviceIndex);
      }
    }
  }

  /** {@link #run} in {@code spare} where it is not null, else (or where it could not) in a new process. */
  private static boolean run(Path dir, int platformIndex, int deviceIndex, String specializations, int maxStandIns,
      List<String> launcher, SpareCompileProcess spare) throws IOException {
    if (spare != null) {
      try {
        int exit = BackendSupport.awaitOrKill(spare.process(), "the PoCL compile process");
        if (exit == 0 || exit == EXIT_COMPILE_FAILED || exit == EXIT_INVALID_OPTIONS || exit == EXIT_TOO_MANY_STAND_INS) {
          return outcome(exit, dir, spare.output());
        }
        // Anything else (it could not name the shapes, or failed on its own): a process of the request's own does it.
        SpareCompileProcess.reportFallback(exit, read(dir.resolve("error")), read(spare.output()));
        Files.deleteIfExists(dir.resolve("error"));
      } finally {
        spare.discard();
      }
    }
    List<String> cmd = PoclProcessCommand.command(launcher, List.of(dir.toString(), Integer.toString(platformIndex),
        Integer.toString(deviceIndex), Integer.toString(maxStandIns)));
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
        .redirectOutput(dir.resolve("output").toFile());
    PoclProcessCommand.environment(pb, dir.resolve("pocl"));
    pb.environment().put("POCL_BINARY_SPECIALIZE_WG", specializations);
    Process p = pb.start();
    p.getOutputStream().close();
    return outcome(BackendSupport.awaitOrKill(p, "the PoCL compile process"), dir, dir.resolve("output"));
  }

  /** A compile process's exit as {@link #run} returns it, or its failure thrown ({@code output}: what it printed). */
  private static boolean outcome(int exit, Path dir, Path output) throws IOException {
    if (exit == EXIT_COMPILE_FAILED) {
      throw new CompileException(read(dir.resolve("error")), read(dir.resolve("build.log"))); // "clBuildProgram failed: ..."
    }
    if (exit == EXIT_INVALID_OPTIONS) {
      throw new IllegalArgumentException(read(dir.resolve("error")));
    }
    if (exit == EXIT_TOO_MANY_STAND_INS) {
      return false;
    }
    if (exit != 0 || !Files.isRegularFile(dir.resolve("program.bin"))) {
      throw new IllegalStateException("the PoCL compile process (" + PoclCompileProcess.class.getSimpleName()
          + ") exited with status " + exit + ": " + read(output).strip());
    }
    return true;
  }

  static String read(Path file) throws IOException {
    return Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
  }
}
