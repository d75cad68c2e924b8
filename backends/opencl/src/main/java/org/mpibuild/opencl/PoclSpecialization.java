package org.mpibuild.opencl;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Stream;
import org.jocl.CL;
import org.jocl.cl_program;
import org.mpibuild.CompileException;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;
import org.mpibuild.support.BackendSupport;
import org.mpibuild.support.NativeLibraries;

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
 * variable set to the request's shapes; the parent loads the binary it writes. Where kernels name different
 * shapes, a first pass builds the program and its generic code, and every (kernel, shape) pair that was not
 * named gets the generic function under that shape's name, so that the second pass builds the named pairs
 * only (a tiled program of 4 kernels at 3 tile sizes builds 4 specializations, not 12). The files live in a
 * private directory, PoCL's cache of the compile included, that is deleted afterwards.
 */
final class PoclSpecialization {
  /** The name PoCL's platform reports. */
  static final String PLATFORM_NAME = "Portable Computing Language";
  /** PoCL's large-grid limit for CPU devices: {@code grid_width_specialization_limit = USHRT_MAX}. */
  static final long SMALL_GRID_LIMIT = 65_535;

  private static final int EXIT_COMPILE_FAILED = 10;
  private static final int EXIT_INVALID_OPTIONS = 11;

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
    Path dir = null;
    try {
      dir = Files.createTempDirectory("mpi-build-pocl", PosixFilePermissions.asFileAttribute(
          PosixFilePermissions.fromString("rwx------")));
      Files.writeString(dir.resolve("source.cl"), request.source());
      Files.writeString(dir.resolve("options"), request.options());
      Map<String, Set<String>> perKernel = perKernel(request.launchShapes());
      List<String> union = names(request.launchShapes());
      if (!exact(request, perKernel, union)) {
        // First the program and its generic code, in a cache of this compile's own; then every (kernel, shape)
        // that nobody named gets the generic function under the shape's name (it runs any shape), so that
        // the second pass, with PoCL's variable set, builds the named pairs only.
        run(dir, platformIndex, deviceIndex, null);
        fillWithGeneric(dir.resolve("pocl"), perKernel, union);
      }
      run(dir, platformIndex, deviceIndex, String.join(",", union));
      return new Result(Files.readAllBytes(dir.resolve("program.bin")), read(dir.resolve("build.log")));
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

  /** The specialization names of each kernel's own shapes. */
  static Map<String, Set<String>> perKernel(List<LaunchShape> shapes) {
    Map<String, Set<String>> out = new LinkedHashMap<>();
    for (LaunchShape s : shapes) {
      out.computeIfAbsent(s.kernel(), k -> new LinkedHashSet<>()).addAll(names(List.of(s)));
    }
    return out;
  }

  /**
   * Whether one pass builds nothing that was not named: the request names its kernels, and each of them
   * names every shape of the union.
   */
  static boolean exact(KernelSource request, Map<String, Set<String>> perKernel, List<String> union) {
    return !request.kernelNames().isEmpty() && request.kernelNames().stream()
        .allMatch(k -> perKernel.getOrDefault(k, Set.of()).containsAll(union));
  }

  /**
   * Puts each kernel's generic work-group function ({@code KERNEL/0-0-0/KERNEL.so} in the program's cache
   * directory, the one that holds {@code program.bc}) under every name of {@code union} that the kernel did
   * not name, where PoCL looks for a built specialization before it builds one
   * ({@code pocl_check_kernel_disk_cache}). PoCL's generic function takes its local size at run time, so it
   * runs those launches correctly, as unspecialized code.
   */
  static void fillWithGeneric(Path cache, Map<String, Set<String>> perKernel, List<String> union) throws IOException {
    List<Path> programs;
    try (Stream<Path> files = Files.walk(cache)) {
      programs = files.filter(f -> f.getFileName().toString().equals("program.bc")).map(Path::getParent).toList();
    }
    if (programs.size() != 1) {
      throw new IllegalStateException("the PoCL compile process left " + programs.size() + " programs in " + cache
          + ", not one");
    }
    try (Stream<Path> kernels = Files.list(programs.get(0))) {
      for (Path kernel : kernels.filter(Files::isDirectory).toList()) {
        String name = kernel.getFileName().toString();
        Path generic = kernel.resolve("0-0-0").resolve(name + ".so");
        if (!Files.isRegularFile(generic)) {
          continue;
        }
        for (String spec : union) {
          if (!perKernel.getOrDefault(name, Set.of()).contains(spec)) {
            Files.createDirectories(kernel.resolve(spec));
            Files.copy(generic, kernel.resolve(spec).resolve(name + ".so"), StandardCopyOption.REPLACE_EXISTING);
          }
        }
      }
    }
  }

  /**
   * One pass of the child in {@code dir}, with PoCL's cache in {@code dir/pocl} and
   * {@code POCL_BINARY_SPECIALIZE_WG} set to {@code specializations} (removed when null).
   */
  private static void run(Path dir, int platformIndex, int deviceIndex, String specializations) throws IOException {
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m"));
    if (Runtime.version().feature() >= 22) {
      cmd.add("--enable-native-access=ALL-UNNAMED");
    }
    cmd.addAll(List.of("-cp", classPath(), PoclSpecialization.class.getName(), dir.toString(),
        Integer.toString(platformIndex), Integer.toString(deviceIndex)));
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
        .redirectOutput(dir.resolve("output").toFile());
    // PoCL's cache, private to this compile, is how the two passes meet: it is on, whatever the caller's is.
    pb.environment().put("POCL_CACHE_DIR", dir.resolve("pocl").toString());
    pb.environment().put("POCL_KERNEL_CACHE", "1");
    if (specializations == null) {
      pb.environment().remove("POCL_BINARY_SPECIALIZE_WG");
    } else {
      pb.environment().put("POCL_BINARY_SPECIALIZE_WG", specializations);
    }
    chainSignals(pb);
    Process p = pb.start();
    p.getOutputStream().close();
    int exit = BackendSupport.awaitOrKill(p, "the PoCL compile process");
    if (exit == EXIT_COMPILE_FAILED) {
      throw new CompileException("clBuildProgram failed: " + read(dir.resolve("error")), read(dir.resolve("build.log")));
    }
    if (exit == EXIT_INVALID_OPTIONS) {
      throw new IllegalArgumentException(read(dir.resolve("error")));
    }
    if (exit != 0 || !Files.isRegularFile(dir.resolve("program.bin"))) {
      throw new IllegalStateException("the PoCL compile process (" + PoclSpecialization.class.getSimpleName()
          + ") exited with status " + exit + ": " + read(dir.resolve("output")).strip());
    }
  }

  /**
   * Preloads the JVM's signal-chaining library into the child, as {@code bin/mpi-build-rank} does for the
   * ranks: LLVM inside PoCL installs signal handlers that delete the compiler's temporary files on any
   * signal, including those the JVM uses internally.
   */
  private static void chainSignals(ProcessBuilder pb) {
    Path jsig = Path.of(System.getProperty("java.home"), "lib", "libjsig.so");
    String preload = pb.environment().getOrDefault("LD_PRELOAD", "");
    if (Files.isRegularFile(jsig) && !preload.contains("libjsig")) {
      pb.environment().put("LD_PRELOAD", preload.isEmpty() ? jsig.toString() : jsig + ":" + preload);
    }
  }

  /** The child's class path: where this backend, JOCL and the core are, wherever the parent found them. */
  private static String classPath() {
    Set<String> entries = new LinkedHashSet<>();
    for (Class<?> c : List.of(PoclSpecialization.class, CL.class, NativeLibraries.class)) {
      CodeSource where = c.getProtectionDomain().getCodeSource();
      if (where == null || where.getLocation() == null) {
        return System.getProperty("java.class.path");
      }
      try {
        entries.add(Path.of(where.getLocation().toURI()).toString());
      } catch (URISyntaxException | IllegalArgumentException e) {
        return System.getProperty("java.class.path");
      }
    }
    return String.join(File.pathSeparator, entries);
  }

  private static String read(Path file) throws IOException {
    return Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
  }

  /**
   * The child: {@code DIR PLATFORM-INDEX DEVICE-INDEX}. Builds {@code DIR/source.cl} with the options in
   * {@code DIR/options}, writes {@code DIR/build.log} and {@code DIR/program.bin}; exits 10 when the source
   * does not compile, 11 when the options are invalid (the reason in {@code DIR/error}).
   */
  public static void main(String[] args) throws IOException {
    Path dir = Path.of(args[0]);
    OpenClBackend backend = OpenClBackend.open(Integer.parseInt(args[1]), Integer.parseInt(args[2]));
    int exit = 0;
    try {
      cl_program program = backend.build(Files.readString(dir.resolve("source.cl")), Files.readString(dir.resolve("options")));
      Files.writeString(dir.resolve("build.log"), backend.buildLog(program));
      Files.write(dir.resolve("program.bin"), backend.programBinary(program));
      CL.clReleaseProgram(program);
    } catch (CompileException e) {
      Files.writeString(dir.resolve("build.log"), Objects.toString(e.buildLog(), ""));
      Files.writeString(dir.resolve("error"), Objects.toString(e.reason(), e.toString()));
      exit = EXIT_COMPILE_FAILED;
    } catch (IllegalArgumentException e) {
      Files.writeString(dir.resolve("error"), Objects.toString(e.getMessage(), e.toString()));
      exit = EXIT_INVALID_OPTIONS;
    } finally {
      backend.close();
    }
    System.exit(exit);
  }
}
