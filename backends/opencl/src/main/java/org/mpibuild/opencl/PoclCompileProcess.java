package org.mpibuild.opencl;

import static org.mpibuild.opencl.PoclSpecialization.EXIT_COMPILE_FAILED;
import static org.mpibuild.opencl.PoclSpecialization.EXIT_INVALID_OPTIONS;
import static org.mpibuild.opencl.PoclSpecialization.EXIT_TOO_MANY_STAND_INS;

import java.io.IOException;
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

/**
 * The PoCL compile process that {@link PoclSpecialization} starts: builds a request in a process whose environment
 * names its launch shapes, gives PoCL stand-ins for every work-group function nobody named, and writes the binary
 * without them.
 */
final class PoclCompileProcess {
  private PoclCompileProcess() {}

  /**
   * The child: {@code DIR PLATFORM-INDEX DEVICE-INDEX MAX-STAND-INS}, with {@code POCL_BINARY_SPECIALIZE_WG} set
   * to the shapes' names. Builds {@code DIR/source.cl} with the options in {@code DIR/options}, writes
   * {@code DIR/build.log} and {@code DIR/program.bin}, a binary with the work-group functions of the (kernel,
   * shape) pairs in {@code DIR/named} and no others; exits 10 when the source does not compile, 11 when the
   * options are invalid (the reason in {@code DIR/error}), 12 when the kernels times the shapes need more
   * stand-ins than allowed (the number of kernels in {@code DIR/kernels}).
   */
  public static void main(String[] args) throws IOException {
    Path dir = Path.of(args[0]);
    OpenClBackend backend = OpenClDevices.open(Integer.parseInt(args[1]), Integer.parseInt(args[2]));
    int exit = 0;
    try {
      cl_program program = backend.build(Files.readString(dir.resolve("source.cl")), Files.readString(dir.resolve("options")));
      Files.writeString(dir.resolve("build.log"), backend.buildLog(program));
      Map<String, Set<String>> named = PoclSpecialization.pairs(Files.readString(dir.resolve("named")));
      List<String> union = List.of(System.getenv("POCL_BINARY_SPECIALIZE_WG").split(","));
      List<String> kernels = OpenClBackend.definedKernels(program);
      if ((long) kernels.size() * (union.size() + 1) > Integer.parseInt(args[3])) {
        Files.writeString(dir.resolve("kernels"), Integer.toString(kernels.size()));
        CL.clReleaseProgram(program);
        backend.close();
        System.exit(EXIT_TOO_MANY_STAND_INS);
      }
      cl_program stubs = standIns(backend, dir.resolve("pocl"), kernels, named, union);
      try {
        byte[] binary = backend.programBinary(program);
        Files.write(dir.resolve("program.bin"),
            PoclBinary.keepOnly(binary, (kernel, spec) -> named.getOrDefault(kernel, Set.of()).contains(spec)));
      } finally {
        if (stubs != null) {
          CL.clReleaseProgram(stubs);
        }
        CL.clReleaseProgram(program);
      }
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
    OptionalInt machine = StandInLibrary.machine();
    if (machine.isPresent()) {
      Path libraries = Files.createDirectory(cache.resolve("stand-ins"));
      for (String k : kernels) {
        Files.write(libraries.resolve(k + ".so"), StandInLibrary.write(List.of(k), machine.getAsInt()));
      }
      link(program, kernels, named, union, k -> libraries.resolve(k + ".so"));
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
