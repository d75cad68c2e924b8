package org.mpibuild.programs;

import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * How much CPU time this JVM's JIT compiler threads have used, for a benchmark that must not measure while they
 * run on its cores. The source is chosen once. On Linux it is the threads' own run time
 * ({@code /proc/self/task/TID/schedstat}, nanoseconds, for every thread named {@code C1 CompilerThre...} or
 * {@code C2 CompilerThre...}), which counts a compilation while it runs; a thread that has ended keeps the last
 * time read for it, so the total never goes down. Elsewhere it is the {@link CompilationMXBean}'s total, which
 * counts only compilations that have finished and succeeded. JVMCI compiler threads are not counted.
 */
final class JitCompilers {
  private static final Path TASKS = Path.of("/proc/self/task");
  /** Whether the threads' run times can be read here (a Linux kernel with schedstat): decided once. */
  private static final boolean PROC = Files.isDirectory(TASKS) && Files.isReadable(Path.of("/proc/self/schedstat"));
  /** The last run time read per compiler thread id. */
  private static final Map<String, Long> LAST = new HashMap<>();

  private JitCompilers() {}

  /** The compiler threads' CPU time so far, in nanoseconds (see the class comment for what it counts). */
  static synchronized long cpuNanos() {
    if (!PROC) {
      CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
      return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() * 1_000_000 : 0;
    }
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
      for (Path task : tasks) {
        long nanos = compilerNanos(task);
        if (nanos > 0) {
          LAST.merge(task.getFileName().toString(), nanos, Math::max);
        }
      }
    } catch (IOException | RuntimeException e) {
      // a listing cut short: the threads not reached keep their last time
    }
    long total = 0;
    for (long nanos : LAST.values()) {
      total += nanos;
    }
    return total;
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
