package org.mpibuild.opencl;

import static org.mpibuild.opencl.PoclSpecialization.EXIT_COMPILE_FAILED;
import static org.mpibuild.opencl.PoclSpecialization.EXIT_INVALID_OPTIONS;
import static org.mpibuild.opencl.PoclSpecialization.EXIT_TOO_MANY_STAND_INS;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Stream;
import org.jocl.CL;
import org.jocl.cl_program;
import org.mpibuild.CompileException;
import org.mpibuild.support.BackendSupport;

/**
 * The PoCL compile process that {@link PoclSpecialization} starts: builds a request in a process whose environment
 * names its launch shapes, gives PoCL stand-ins for every work-group function nobody named, and writes the binary
 * without them.
 */
final class PoclCompileProcess {
  private PoclCompileProcess() {}

  /**
   * The child: {@code DIR PLATFORM-INDEX DEVICE-INDEX MAX-STAND-INS}, with {@code POCL_BINARY_SPECIALIZE_WG} set
   * to the shapes' names; or, started ahead, {@code --wait HOME PLATFORM-INDEX DEVICE-INDEX}, which takes the rest
   * of its request on its standard input ({@link #serve}). Builds {@code DIR/source.cl} with the options in
   * {@code DIR/options}, writes {@code DIR/build.log} and {@code DIR/program.bin}, a binary with the work-group
   * functions of the (kernel, shape) pairs in {@code DIR/named} and no others; exits 10 when the source does not
   * compile, 11 when the options are invalid (the reason in {@code DIR/error}), 12 when the kernels times the shapes
   * need more stand-ins than allowed (the number of kernels in {@code DIR/kernels}).
   */
  public static void main(String[] args) throws IOException {
    if (args[0].equals(WAIT)) {
      System.exit(serve(Path.of(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3])));
    }
    OpenClBackend backend = OpenClDevices.open(Integer.parseInt(args[1]), Integer.parseInt(args[2]));
    int exit;
    try {
      exit = compile(backend, Path.of(args[0]), List.of(System.getenv("POCL_BINARY_SPECIALIZE_WG").split(",")),
          Integer.parseInt(args[3]), false);
    } finally {
      backend.close();
    }
    System.exit(exit);
  }

  /** The first argument of a compile process started ahead. */
  static final String WAIT = "--wait";

  /**
   * The request line for a compile process started ahead: {@code DIR}, {@code MAX-STAND-INS}, the processors the
   * compile may run on (those of the calling thread; {@code -} if unknown), the shapes.
   */
  static String request(Path dir, int maxStandIns, String specializations) {
    String cpus = IdlePriority.processorsOfThisThread();
    return dir + "\t" + maxStandIns + "\t" + (cpus == null ? "-" : cpus) + "\t" + specializations + "\n";
  }

  /**
   * A compile process started ahead of its request ({@link SpareCompileProcess}). A thread of its own, at the idle
   * priority ({@link IdlePriority#lowerThisThread}), opens the device and builds a small program (PoCL's and LLVM's
   * start-up, most of what a new process pays before it compiles), then empties the PoCL cache; meanwhile the main
   * thread, at the normal priority, reads one {@link #request} line. Once the warm-up is done, the main thread binds
   * itself where the caller runs, sets {@code POCL_BINARY_SPECIALIZE_WG} to the line's shapes in its
   * {@link EnvironmentSlot} (PoCL reads the variable at the binary query) and compiles as a process started for the
   * request would, at the normal priority. It exits {@link PoclSpecialization#EXIT_NOT_WARM} where its warm-up,
   * unfinished when the request came, gets no idle time ({@link #warmedUp}), {@link PoclSpecialization#EXIT_NOT_HERE}
   * where it cannot name the shapes or PoCL built a named function nowhere (the reason in {@code DIR/error}): the
   * caller then starts a process of its own. Where its input ends before a request (its parent has gone), it deletes
   * {@code home}, its own directory, and exits.
   */
  private static int serve(Path home, int platformIndex, int deviceIndex) throws IOException {
    java.util.concurrent.CompletableFuture<OpenClBackend> warm = new java.util.concurrent.CompletableFuture<>();
    Thread warmUp = new Thread(() -> {
      try {
        IdlePriority.lowerThisThread();
        OpenClBackend backend = OpenClDevices.open(platformIndex, deviceIndex);
        CL.clReleaseProgram(backend.build(WARM_UP, ""));
        Path cache = Path.of(System.getenv("POCL_CACHE_DIR"));
        BackendSupport.deleteTree(cache);
        Files.createDirectories(cache);
        warm.complete(backend);
      } catch (IOException | RuntimeException | Error e) {
        warm.completeExceptionally(e);
      }
    }, "warm-up");
    warmUp.setDaemon(true);
    warmUp.start();
    String line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
    if (line == null) {
      BackendSupport.deleteTree(home);
      return 0;
    }
    String[] fields = line.split("\t", 4);
    Path dir = Path.of(fields[0]);
    OpenClBackend backend = warmedUp(warm, warmUp);
    if (backend == null) {
      Files.writeString(dir.resolve("error"), warm.isDone() ? "its warm-up failed" : "its warm-up found no idle time");
      return PoclSpecialization.EXIT_NOT_WARM;
    }
    String problem = EnvironmentSlot.set("POCL_BINARY_SPECIALIZE_WG", fields[3]);
    if (problem != null) {
      Files.writeString(dir.resolve("error"), problem);
      return PoclSpecialization.EXIT_NOT_HERE;
    }
    try {
      if (!fields[2].equals("-")) {
        IdlePriority.bindThisThread(fields[2]);
      }
      return compile(backend, dir, List.of(fields[3].split(",")), Integer.parseInt(fields[1]), true);
    } finally {
      backend.close();
    }
  }

  /**
   * The warmed-up backend, once the warm-up is done: waited for while it runs (the ranks wait for this compile, so
   * their cores are idle), given up (null) once it gets less than a fifth of a processor over {@link #STARVED} (the
   * node has no idle time: the program computes meanwhile, an asynchronous build) or fails.
   */
  private static OpenClBackend warmedUp(java.util.concurrent.CompletableFuture<OpenClBackend> warm, Thread warmUp) {
    java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
    long cpu = threads.getThreadCpuTime(warmUp.getId());
    while (true) {
      try {
        return warm.get(STARVED.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.TimeoutException e) {
        long now = threads.getThreadCpuTime(warmUp.getId());
        if (now - cpu < STARVED.toNanos() / 5) {
          return null;
        }
        cpu = now;
      } catch (InterruptedException | java.util.concurrent.ExecutionException e) {
        return null;
      }
    }
  }

  /** How long a warm-up that gets too little of a processor is waited for. */
  private static final java.time.Duration STARVED = java.time.Duration.ofMillis(200);

  /** What a compile process started ahead builds first: enough of OpenCL C to load PoCL's kernel library. */
  private static final String WARM_UP = "__kernel void warm_up(__global float* x, float a) {\n"
      + "  size_t i = get_global_id(0);\n  x[i] = a * sqrt(x[i]) + (float) get_local_size(0);\n}\n";

  /**
   * The compile of {@code dir}'s request with PoCL's cache where {@code POCL_CACHE_DIR} names it: the process's exit
   * status. Where {@code check}, a named function missing from the binary exits {@link PoclSpecialization#EXIT_NOT_HERE}.
   */
  private static int compile(OpenClBackend backend, Path dir, List<String> union, int maxStandIns, boolean check)
      throws IOException {
    try {
      cl_program program = backend.build(Files.readString(dir.resolve("source.cl")), Files.readString(dir.resolve("options")));
      Files.writeString(dir.resolve("build.log"), backend.buildLog(program));
      Map<String, Set<String>> named = PoclSpecialization.pairs(Files.readString(dir.resolve("named")));
      List<String> kernels = OpenClBackend.definedKernels(program);
      if ((long) kernels.size() * (union.size() + 1) > maxStandIns) {
        Files.writeString(dir.resolve("kernels"), Integer.toString(kernels.size()));
        CL.clReleaseProgram(program);
        return EXIT_TOO_MANY_STAND_INS;
      }
      cl_program stubs = standIns(backend, Path.of(System.getenv("POCL_CACHE_DIR")), kernels, named, union);
      try {
        byte[] binary = PoclBinary.keepNamed(backend.programBinary(program), named);
        String missing = check ? missing(binary, named) : null;
        if (missing != null) {
          Files.writeString(dir.resolve("error"), "PoCL built no function for " + missing);
          return PoclSpecialization.EXIT_NOT_HERE;
        }
        Files.write(dir.resolve("program.bin"), binary);
      } finally {
        if (stubs != null) {
          CL.clReleaseProgram(stubs);
        }
        CL.clReleaseProgram(program);
      }
      return 0;
    } catch (CompileException e) {
      Files.writeString(dir.resolve("build.log"), Objects.toString(e.buildLog(), ""));
      Files.writeString(dir.resolve("error"), Objects.toString(e.reason(), e.toString()));
      return EXIT_COMPILE_FAILED;
    } catch (IllegalArgumentException e) {
      Files.writeString(dir.resolve("error"), Objects.toString(e.getMessage(), e.toString()));
      return EXIT_INVALID_OPTIONS;
    }
  }

  /** The first named (kernel, shape) pair that {@code binary} has no function of, as "KERNEL SHAPE"; null if none. */
  static String missing(byte[] binary, Map<String, Set<String>> named) {
    Map<String, Set<String>> built = new java.util.HashMap<>();
    for (PoclBinary.KernelRecord k : PoclBinary.parse(binary).kernels()) {
      k.files().forEach(f -> built.computeIfAbsent(k.name(), x -> new java.util.HashSet<>()).add(f.specialization()));
    }
    for (Map.Entry<String, Set<String>> e : named.entrySet()) {
      for (String spec : e.getValue()) {
        if (!built.getOrDefault(e.getKey(), Set.of()).contains(spec)) {
          return e.getKey() + " " + spec;
        }
      }
    }
    return null;
  }

  /**
   * Keeps PoCL from generating, at the binary query, the work-group functions nobody named: the generic one of
   * each kernel, which PoCL forces ({@code pocl_driver_build_poclbinary}: "Force generate a generic WG
   * function"), and the shapes another kernel named, which {@code POCL_BINARY_SPECIALIZE_WG} applies to every
   * kernel. PoCL builds none that it finds on disk, once it has loaded it and found its work-group symbol
   * ({@code pocl_check_kernel_dlhandle_cache}, {@code _pocl_kernel_NAME_workgroup}). So the program's unnamed
   * functions are links to a stand-in that has its symbol: a {@link StandInLibrary} written here for each kernel, or, on a
   * processor it is not made for, the generic functions of a program of empty kernels with the same names, built
   * and queried first (milliseconds per kernel). They reach the binary, which {@link PoclBinary#keepOnly} then
   * removes: a rank that launches an unnamed shape builds it from {@code program.bc}, as it would without the
   * binary.
   *
   * <p>Anything that fails here leaves PoCL to build the functions for real (slower, as correct): the stand-ins,
   * or a kernel whose directory is not named after it (PoCL 6.0 and later shorten long names).
   *
   * @return the empty kernels' program, to release after the query; null where there is none
   */
  static cl_program standIns(OpenClBackend backend, Path cache, List<String> kernels,
      Map<String, Set<String>> named, List<String> union) throws IOException {
    Path program = programDirectory(cache, null);
    if (linkStandIns(program, Files.createDirectory(cache.resolve("stand-ins")), kernels, named, union)) {
      return null;
    }
    StringBuilder source = new StringBuilder();
    kernels.forEach(k -> source.append("__kernel void ").append(k).append("(void) {}\n"));
    cl_program stubs;
    try {
      stubs = backend.build(source.toString(), "");
    } catch (RuntimeException e) {
      return null;
    }
    Path stubDir = programDirectory(cache, program);
    for (String k : kernels) {
      for (String spec : union) {
        link(stubDir.resolve(k).resolve(spec).resolve(k + ".so"), Path.of("..", GENERIC, k + ".so"));
      }
    }
    backend.programBinary(stubs);
    link(program, kernels, named, union, k -> {
      Path generic = stubDir.resolve(k).resolve(GENERIC).resolve(k + ".so");
      return Files.isRegularFile(generic) ? generic : null;
    });
    return stubs;
  }

  /**
   * Writes a {@link StandInLibrary} for each kernel into {@code libraries} and links each kernel's functions in
   * {@code program}, PoCL's directory of the program, that it did not name, generic included, to it; false (nothing
   * written) on a processor the library is not made for.
   */
  static boolean linkStandIns(Path program, Path libraries, List<String> kernels, Map<String, Set<String>> named,
      List<String> union) throws IOException {
    OptionalInt machine = StandInLibrary.machine();
    if (machine.isEmpty()) {
      return false;
    }
    for (String k : kernels) {
      Files.write(libraries.resolve(k + ".so"), StandInLibrary.write(List.of(k), machine.getAsInt()));
    }
    link(program, kernels, named, union, k -> libraries.resolve(k + ".so"));
    return true;
  }

  /** Links each kernel's functions that it did not name, generic included, to its stand-in (none where null). */
  private static void link(Path program, List<String> kernels, Map<String, Set<String>> named, List<String> union,
      Function<String, Path> standIn) throws IOException {
    for (String k : kernels) {
      Path target = standIn.apply(k);
      if (target == null) {
        continue;
      }
      Set<String> mine = named.getOrDefault(k, Set.of());
      for (String spec : Stream.concat(Stream.of(GENERIC), union.stream()).toList()) {
        if (!mine.contains(spec)) {
          link(program.resolve(k).resolve(spec).resolve(k + ".so"), target);
        }
      }
    }
  }

  /** PoCL's directory for a generic work-group function: {@code !specialized ? 0 : local size}. */
  private static final String GENERIC = "0-0-0";

  private static void link(Path link, Path target) throws IOException {
    Files.createDirectories(link.getParent());
    Files.createSymbolicLink(link, target);
  }

  /** The directory of the one program in PoCL's cache (the one with {@code program.bc}) other than {@code not}. */
  private static Path programDirectory(Path cache, Path not) throws IOException {
    List<Path> programs;
    try (Stream<Path> files = Files.walk(cache)) {
      programs = files.filter(f -> f.getFileName().toString().equals("program.bc")).map(Path::getParent)
          .filter(p -> !p.equals(not)).toList();
    }
    if (programs.size() != 1) {
      throw new IllegalStateException("the PoCL compile process found " + programs.size() + " new programs in "
          + cache + ", not one");
    }
    return programs.get(0);
  }
}
