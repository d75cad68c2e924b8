package org.mpibuild.opencl;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.jocl.CL;
import org.jocl.cl_program;
import org.mpibuild.CompileException;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;
import org.mpibuild.spi.BackendSupport;
import org.mpibuild.spi.NativeLibraries;

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
 * variable set to the request's shapes; the parent loads the binary it writes. Its files live in a private
 * directory that is deleted afterwards.
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
      List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m"));
      if (Runtime.version().feature() >= 22) {
        cmd.add("--enable-native-access=ALL-UNNAMED");
      }
      cmd.addAll(List.of("-cp", classPath(), PoclSpecialization.class.getName(), dir.toString(),
          Integer.toString(platformIndex), Integer.toString(deviceIndex)));
      ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
          .redirectOutput(dir.resolve("output").toFile());
      pb.environment().put("POCL_BINARY_SPECIALIZE_WG", String.join(",", names(request.launchShapes())));
      chainSignals(pb);
      Process p = pb.start();
      p.getOutputStream().close();
      int exit;
      try {
        exit = p.waitFor();
      } catch (InterruptedException e) {
        p.destroyForcibly();
        Thread.currentThread().interrupt();
        throw new IllegalStateException("the PoCL compile process was interrupted (compile timeout) and killed");
      }
      String log = read(dir.resolve("build.log"));
      if (exit == EXIT_COMPILE_FAILED) {
        throw new CompileException("clBuildProgram failed: " + read(dir.resolve("error")), log);
      }
      if (exit == EXIT_INVALID_OPTIONS) {
        throw new IllegalArgumentException(read(dir.resolve("error")));
      }
      if (exit != 0 || !Files.isRegularFile(dir.resolve("program.bin"))) {
        throw new IllegalStateException("the PoCL compile process (" + PoclSpecialization.class.getSimpleName()
            + ") exited with status " + exit + ": " + read(dir.resolve("output")).strip());
      }
      return new Result(Files.readAllBytes(dir.resolve("program.bin")), log);
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
    return String.join(java.io.File.pathSeparator, entries);
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
      Files.writeString(dir.resolve("build.log"), e.buildLog());
      Files.writeString(dir.resolve("error"), e.reason());
      exit = EXIT_COMPILE_FAILED;
    } catch (IllegalArgumentException e) {
      Files.writeString(dir.resolve("error"), e.getMessage());
      exit = EXIT_INVALID_OPTIONS;
    } finally {
      backend.close();
    }
    System.exit(exit);
  }
}
