package org.mpibuild.opencl;

import java.io.File;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.jocl.CL;
import org.mpibuild.support.NativeLibraries;

/** How a PoCL compile process starts ({@link PoclSpecialization}, {@link SpareCompileProcess}): its command and environment. */
final class PoclProcessCommand {
  private PoclProcessCommand() {}

  /** A compile process's argument list: {@code launcher}, this JVM's {@code java} with its options, the class, {@code args}. */
  static List<String> command(List<String> launcher, List<String> args) {
    List<String> cmd = new ArrayList<>(launcher);
    cmd.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m"));
    if (Runtime.version().feature() >= 22) {
      cmd.add("--enable-native-access=ALL-UNNAMED");
    }
    // What the backend needs of the parent's conditions: its temporary directory (where JOCL's native library
    // is installed and loaded, which may be the only one that allows executables) and its library path.
    for (String property : PoclSpecialization.INHERITED_PROPERTIES) {
      String value = System.getProperty(property);
      if (value != null) {
        cmd.add("-D" + property + "=" + value);
      }
    }
    cmd.addAll(List.of("-cp", classPath(), PoclCompileProcess.class.getName()));
    cmd.addAll(args);
    return cmd;
  }

  /** A compile process's environment: the parent's, less what would disturb it, with PoCL's cache in {@code cache}. */
  static void environment(ProcessBuilder pb, Path cache) {
    // None of the parent's accidents: options for every JVM (an agent that takes a port, a second collector)
    // would make the child fail or compete; the child's own options above are what it needs.
    PoclSpecialization.JVM_OPTION_VARIABLES.forEach(pb.environment()::remove);
    pb.environment().remove("POCL_BINARY_SPECIALIZE_WG");
    // PoCL's cache, private to this compile, is where the stand-ins go: it is on, whatever the caller's is.
    pb.environment().put("POCL_CACHE_DIR", cache.toString());
    pb.environment().put("POCL_KERNEL_CACHE", "1");
    chainSignals(pb);
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

  /** The child's class path: where this backend, JOCL, the core and slf4j's API are, wherever the parent found them. */
  private static String classPath() {
    Set<String> entries = new LinkedHashSet<>();
    // slf4j's API too: the backend logs (a build that fails logs through PoclCacheRace), with no provider there
    for (Class<?> c : List.of(PoclSpecialization.class, CL.class, NativeLibraries.class, org.slf4j.Logger.class)) {
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

}
