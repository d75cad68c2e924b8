package org.mpibuild.ffm;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Which MPI C libraries the FFM binding tries, in order, and why: pure logic over the environment and the
 * file system, so that it is tested without MPI.
 *
 * <p>The launcher tells the implementation: Open MPI's mpirun sets {@code OMPI_COMM_WORLD_SIZE}, MPICH's Hydra
 * {@code PMI_RANK} or {@code MPI_LOCALNRANKS}. Its standard-ABI library comes first ({@code
 * libmpi_abi_openmpi.so*} or {@code libmpi_abi_mpich.so*}, by full path: Debian installs both under the one
 * SONAME {@code libmpi_abi.so.1}, and the other implementation's library aborts under this launcher), then
 * the shared name {@code libmpi_abi.so.1}, then the implementation's own library ({@code libmpi.so.40},
 * {@code libmpich.so.12}). Without a launcher (a singleton), Open MPI's come before MPICH's.
 */
final class Libraries {
  /** Which ABI the binding drives a library with ({@code MPI_BUILD_MPI_ABI}). */
  enum Abi {
    /** The standard ABI where a library for the launcher's implementation has it, else the implementation's. */
    AUTO,
    /** Only a library with the MPI 5.0 standard ABI. */
    STANDARD,
    /** Only the implementation's own library and tables. */
    IMPLEMENTATION
  }

  /** An implementation: how its launcher is recognised and what its libraries are called. */
  enum Implementation {
    OPEN_MPI("Open MPI", "libmpi_abi_openmpi.so", "libmpi.so.40"),
    MPICH("MPICH", "libmpi_abi_mpich.so", "libmpich.so.12");

    final String label;
    final String standardPrefix;
    final String own;

    Implementation(String label, String standardPrefix, String own) {
      this.label = label;
      this.standardPrefix = standardPrefix;
      this.own = own;
    }
  }

  /** A library to try: a name for the dynamic linker or a full path; whether it is wanted as standard ABI. */
  record Candidate(String library, boolean standard, Implementation implementation) {}

  /** The shared name that either implementation's standard-ABI library may carry. */
  static final String SHARED_STANDARD_NAME = "libmpi_abi.so.1";

  private Libraries() {}

  /** The implementation whose launcher started this process, or null (no launcher, or one not recognised). */
  static Implementation launcher(Map<String, String> env) {
    if (env.containsKey("OMPI_COMM_WORLD_SIZE")) {
      return Implementation.OPEN_MPI;
    }
    if (env.containsKey("PMI_RANK") || env.containsKey("MPI_LOCALNRANKS")) {
      return Implementation.MPICH;
    }
    return null;
  }

  /**
   * The libraries to try, best first.
   *
   * @param abi which ABI is wanted
   * @param env the environment (launcher variables, {@code LD_LIBRARY_PATH})
   * @param dirs the library directories to search for standard-ABI libraries, in order
   */
  static List<Candidate> candidates(Abi abi, Map<String, String> env, List<Path> dirs) {
    Implementation launcher = launcher(env);
    List<Implementation> order = launcher == Implementation.MPICH
        ? List.of(Implementation.MPICH, Implementation.OPEN_MPI) : List.of(Implementation.OPEN_MPI, Implementation.MPICH);
    List<Candidate> out = new ArrayList<>();
    for (Implementation impl : order) {
      if (abi != Abi.IMPLEMENTATION) {
        for (Path p : standardLibraries(impl, dirs)) {
          out.add(new Candidate(p.toString(), true, impl));
        }
        if (impl == order.get(0)) {
          out.add(new Candidate(SHARED_STANDARD_NAME, true, null));
        }
      }
      if (abi != Abi.STANDARD) {
        out.add(new Candidate(impl.own, false, impl));
      }
    }
    return out;
  }

  /** The files {@code <prefix>*} of an implementation's standard-ABI library in {@code dirs}, shortest name first. */
  static List<Path> standardLibraries(Implementation impl, List<Path> dirs) {
    Set<Path> found = new LinkedHashSet<>();
    for (Path dir : dirs) {
      if (!Files.isDirectory(dir)) {
        continue;
      }
      try (Stream<Path> s = Files.list(dir)) {
        s.filter(p -> p.getFileName().toString().startsWith(impl.standardPrefix))
            .sorted(Comparator.comparingInt((Path p) -> p.getFileName().toString().length()).thenComparing(Path::toString))
            .forEach(found::add);
      } catch (IOException e) {
        // An unreadable directory holds nothing we can open.
      }
    }
    // One file per real library: the links and the file they name are the same library.
    Set<Path> real = new LinkedHashSet<>();
    List<Path> out = new ArrayList<>();
    for (Path p : found) {
      try {
        if (real.add(p.toRealPath())) {
          out.add(p);
        }
      } catch (IOException e) {
        // A dangling link (Debian's libmpich-dev has some): nothing to open.
      }
    }
    return out;
  }

  /** The directories searched for standard-ABI libraries: {@code LD_LIBRARY_PATH}, then the system's. */
  static List<Path> searchDirectories(Map<String, String> env) {
    List<Path> dirs = new ArrayList<>();
    String ld = env.get("LD_LIBRARY_PATH");
    if (ld != null) {
      for (String d : ld.split(File.pathSeparator)) {
        if (!d.isBlank()) {
          dirs.add(Path.of(d));
        }
      }
    }
    String arch = switch (System.getProperty("os.arch", "")) {
      case "amd64", "x86_64" -> "x86_64";
      case "aarch64", "arm64" -> "aarch64";
      default -> System.getProperty("os.arch", "");
    };
    Path multiarch = Path.of("/usr/lib", arch + "-linux-gnu");
    dirs.add(multiarch);
    dirs.add(multiarch.resolve("openmpi/lib"));
    dirs.add(multiarch.resolve("mpich/lib"));
    dirs.add(Path.of("/usr/lib64"));
    dirs.add(Path.of("/usr/local/lib"));
    dirs.add(Path.of("/usr/lib"));
    return dirs;
  }

  /**
   * Why a library that opened is not the one to use here, or null if it is: the standard ABI was wanted and
   * the library has none, or the reverse, or it is another implementation than the launcher's.
   */
  static String refusal(Candidate c, Abi abi, boolean hasStandardAbi, String implementation, Implementation launcher) {
    if (abi == Abi.STANDARD && !hasStandardAbi) {
      return "has no MPI 5.0 standard ABI (MPI_BUILD_MPI_ABI=standard)";
    }
    if (abi == Abi.IMPLEMENTATION && hasStandardAbi) {
      return "is a standard-ABI library (MPI_BUILD_MPI_ABI=implementation)";
    }
    if (c.standard() && !hasStandardAbi) {
      return "does not report a standard ABI (MPI_Abi_get_version)";
    }
    if (launcher != null && !implementation.equals(launcher.label)) {
      return "is " + (implementation.isEmpty() ? "an unknown implementation" : implementation) + ", but "
          + launcher.label + "'s launcher started this process";
    }
    return null;
  }
}
