package org.mpibuild.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** What a result was measured on: the machine, the versions and the command, for {@code results.json}. */
final class Machine {
  private Machine() {}

  static Map<String, Object> describe(Path repo) {
    String commit = quiet(List.of("git", "-C", repo.toString(), "rev-parse", "--short=12", "HEAD"));
    boolean dirty = !quiet(List.of("git", "-C", repo.toString(), "status", "--porcelain", "--untracked-files=no")).isEmpty();
    return BenchJson.object(
        "cores", Runtime.getRuntime().availableProcessors(),
        "cpu", firstMatch(Path.of("/proc/cpuinfo"), "model name\\s*:\\s*(.+)"),
        "memory_gib", memoryGib(),
        "open_mpi", firstMatch(quiet(List.of("mpirun", "--version")), "(\\d+\\.\\d+\\.\\d+\\S*)"),
        "pocl", quiet(List.of("dpkg-query", "-W", "-f", "${Version}", "libpocl2")),
        "jdk", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"),
        "mpi_build_commit", commit + (dirty ? " (with uncommitted changes)" : ""),
        "command", ProcessHandle.current().info().commandLine().orElse("?"));
  }

  static double memoryGib() {
    String kb = firstMatch(Path.of("/proc/meminfo"), "MemTotal:\\s*(\\d+) kB");
    return kb.isEmpty() ? 0 : BenchJson.round(Long.parseLong(kb) / 1048576.0, 1);
  }

  static String firstMatch(Path file, String regex) {
    try {
      return firstMatch(Files.readString(file), regex);
    } catch (IOException e) {
      return "";
    }
  }

  static String firstMatch(String text, String regex) {
    Matcher m = Pattern.compile(regex).matcher(text);
    return m.find() ? m.group(1).trim() : "";
  }

  /** A command's output, or "" if it cannot run. */
  static String quiet(List<String> cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      return p.waitFor() == 0 ? out : "";
    } catch (IOException e) {
      return "";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "";
    }
  }
}
