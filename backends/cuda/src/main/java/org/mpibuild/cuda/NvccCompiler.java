package org.mpibuild.cuda;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.mpibuild.CompileException;
import org.mpibuild.KernelSource;
import org.mpibuild.support.BackendSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * nvcc, run as a child process from an argument list, never through a shell, in a private temporary directory
 * (mode 700, removed afterwards). One architecture gives a cubin; several give a fatbin with SASS for each and
 * PTX of the newest.
 */
final class NvccCompiler implements CudaCompiler {
  private static final Logger log = LoggerFactory.getLogger(NvccCompiler.class);
  private static final Pattern VERSION = Pattern.compile("release [0-9.]+, (V[0-9.]+)");
  private static final Pattern UNKNOWN_OPTION = Pattern.compile("(?m)^nvcc fatal\\s*:\\s*(Unknown option.*)$");

  private final Path nvcc;
  private final String version;
  private final String problem;

  /**
   * @param nvcc the nvcc to run, or null if none was found
   * @param version its version, or null if it cannot run
   * @param problem why it cannot run, or null if it can
   */
  NvccCompiler(Path nvcc, String version, String problem) {
    this.nvcc = nvcc;
    this.version = version;
    this.problem = problem;
  }

  /**
   * Runs {@code nvcc --version}.
   *
   * @param nvcc the nvcc to run, or null if none was found
   * @return nvcc, with its version or why it cannot run
   */
  static NvccCompiler probe(Path nvcc) {
    if (nvcc == null) {
      return new NvccCompiler(null, null, "nvcc not found on the PATH, in CUDA_HOME or /usr/local/cuda (set"
          + " MPI_BUILD_NVCC)");
    }
    try {
      return new NvccCompiler(nvcc, version(nvcc), null);
    } catch (IOException e) {
      return new NvccCompiler(nvcc, null, "cannot run " + nvcc + ": " + e.getMessage());
    }
  }

  /**
   * Returns nvcc's version, from {@code nvcc --version}.
   *
   * @param nvcc the nvcc to run
   * @return the version, for example {@code V12.4.131}; else its whole output on one line
   * @throws IOException if it cannot be run, fails, or takes over a minute
   */
  static String version(Path nvcc) throws IOException {
    Process p = new ProcessBuilder(nvcc.toString(), "--version").redirectErrorStream(true).start();
    try {
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IOException("nvcc --version failed: " + out.strip());
      }
      Matcher m = VERSION.matcher(out);
      return m.find() ? m.group(1) : out.strip().replace('\n', ' ');
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
  }

  @Override
  public String name() {
    return "nvcc";
  }

  @Override
  public String problem() {
    return problem;
  }

  @Override
  public String identity(String buildTarget) {
    return "nvcc " + nvcc + " " + version + " flags=" + String.join(" ", targetFlags(CudaArch.parse(buildTarget)));
  }

  /**
   * Returns nvcc's flags for these architectures: a cubin for one; a fatbin for several, with SASS for each
   * and PTX of the newest.
   *
   * @param archs sorted {@code sm_} names
   * @return the flags, one argument each
   */
  static List<String> targetFlags(List<String> archs) {
    List<String> flags = new ArrayList<>();
    if (archs.size() == 1) {
      flags.add("-cubin");
      flags.add("-arch=" + archs.get(0));
      return flags;
    }
    flags.add("-fatbin");
    for (String a : archs) {
      String n = a.substring("sm_".length());
      flags.add("-gencode");
      flags.add("arch=compute_" + n + ",code=sm_" + n);
    }
    String newest = archs.get(archs.size() - 1).substring("sm_".length());
    flags.add("-gencode");
    flags.add("arch=compute_" + newest + ",code=compute_" + newest);
    return flags;
  }

  /**
   * Returns the command that builds {@code source} into {@code output}: nvcc, the target flags, the request's
   * options, the output and the source, one argument each.
   *
   * @param archs the architectures
   * @param options the request's options, split as {@link CudaCompiler#splitOptions} does
   * @param source the source file
   * @param output the binary to write
   * @return the command, for a {@link ProcessBuilder}
   */
  List<String> command(List<String> archs, String options, Path source, Path output) {
    List<String> cmd = new ArrayList<>();
    cmd.add(nvcc.toString());
    cmd.addAll(targetFlags(archs));
    cmd.addAll(CudaCompiler.splitOptions(options));
    cmd.add("-o");
    cmd.add(output.toString());
    cmd.add(source.toString());
    return cmd;
  }

  @Override
  public Output compile(KernelSource request, List<String> archs) {
    Path dir = null;
    try {
      dir = Files.createTempDirectory("mpi-build-nvcc", PosixFilePermissions.asFileAttribute(
          PosixFilePermissions.fromString("rwx------")));
      Path src = dir.resolve("kernel.cu");
      Path out = dir.resolve(archs.size() == 1 ? "kernel.cubin" : "kernel.fatbin");
      Files.writeString(src, request.source());
      Process p = new ProcessBuilder(command(archs, request.options(), src, out)).directory(dir.toFile())
          .redirectErrorStream(true).start();
      p.getOutputStream().close();
      String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      BackendSupport.awaitOrKill(p, "nvcc");
      if (p.exitValue() != 0) {
        throw failure(request.options(), p.exitValue(), output);
      }
      return new Output(Files.readAllBytes(out), output);
    } catch (IOException e) {
      throw new IllegalStateException("cannot run nvcc " + nvcc + ": " + e.getMessage(), e);
    } finally {
      deleteTree(dir);
    }
  }

  /**
   * Returns what a failed run throws: an unknown option names the request's options; anything else is a
   * compile error carrying nvcc's output.
   *
   * @param options the request's options
   * @param status nvcc's exit status, not 0
   * @param output nvcc's output
   * @return the exception to throw
   */
  static RuntimeException failure(String options, int status, String output) {
    Matcher bad = UNKNOWN_OPTION.matcher(output);
    if (bad.find()) {
      return new IllegalArgumentException("invalid build options '" + options + "': " + bad.group(1));
    }
    return new CompileException("nvcc failed with exit status " + status, output);
  }

  private static void deleteTree(Path dir) {
    try {
      BackendSupport.deleteTree(dir);
    } catch (IOException e) {
      log.debug("cannot remove {}: {}", dir, e.toString());
    }
  }
}
