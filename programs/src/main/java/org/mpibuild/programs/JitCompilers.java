package org.mpibuild.programs;

import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How much CPU time this JVM's JIT compiler threads have used, for a benchmark that must not measure while they
 * run on its cores. On Linux the threads' own run time ({@code /proc/self/task/TID/schedstat}, nanoseconds, for
 * every thread named {@code C1 CompilerThre...} or {@code C2 CompilerThre...}), which counts a compilation while it
 * runs; elsewhere the {@link CompilationMXBean}'s total, which counts only compilations that have finished and
 * succeeded.
 */
final class JitCompilers {
  private static final Path TASKS = Path.of("/proc/self/task");

  private JitCompilers() {}

  /** The compiler threads' CPU time so far, in nanoseconds (see the class comment for what it counts). */
  static long cpuNanos() {
    if (Files.isDirectory(TASKS)) {
      long total = 0;
      try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
        for (Path task : tasks) {
          total += compilerNanos(task);
        }
        return total;
      } catch (IOException e) {
        // fall back to what the JVM reports
      }
    }
    CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() * 1_000_000 : 0;
  }

  /** The run time of one thread if it is a JIT compiler, else 0; 0 for a thread that ended meanwhile. */
  private static long compilerNanos(Path task) {
    try {
      String name = Files.readString(task.resolve("comm")).strip();
      if (!name.startsWith("C1 Compiler") && !name.startsWith("C2 Compiler")) {
        return 0;
      }
      String schedstat = Files.readString(task.resolve("schedstat")).strip();
      return Long.parseLong(schedstat.substring(0, schedstat.indexOf(' ')));
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }
}
