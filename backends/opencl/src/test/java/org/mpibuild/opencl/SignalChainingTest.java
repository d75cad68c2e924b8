package org.mpibuild.opencl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;

/**
 * In-process PoCL compiles while other Java threads run, as in every test JVM of this module and every rank
 * that builds on one thread while it computes on others. LLVM inside PoCL installs signal handlers for the
 * temporary files it writes; without the JVM's signal chaining ({@code libjsig}, preloaded by the build for
 * every test JVM and by {@code bin/mpi-build-rank} for every rank) the JVM's own SIGSEGVs (safepoint polls)
 * reach them: the compile then fails ("unable to rename temporary") or, with several threads polling at once,
 * the JVM dies of SIGSEGV (the CI run of 2026-12-05, in a test that compiles nothing itself). With the
 * preload removed from the pom, this test's JVM died of SIGSEGV in 3 runs of 3 on these machines.
 */
class SignalChainingTest {
  @Test
  void thisJvmChainsSignalsThroughItsOwnLibrary() {
    Path jsig = Path.of(System.getProperty("java.home"), "lib", "libjsig.so");
    String preload = System.getenv().getOrDefault("LD_PRELOAD", "");
    assertTrue(List.of(preload.split(":")).contains(jsig.toString()), "LD_PRELOAD is '" + preload
        + "', not this JVM's " + jsig + ": see the surefire configuration in the parent pom");
  }

  @Test
  void compilesWhileOtherThreadsRunAllSucceed() throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    List<Thread> busy = new ArrayList<>();
    for (int t = 0; t < 6; t++) { // allocating threads: safepoints, with every thread polling at once
      Thread thread = new Thread(() -> {
        long bytes = 0;
        while (!stop.get()) {
          bytes += new byte[4096].length;
        }
      }, "busy-" + t);
      thread.setDaemon(true);
      thread.start();
      busy.add(thread);
    }
    int builds = 0;
    try (MpiBuild mpiBuild = MpiBuild.builder().local().build()) {
      long end = System.nanoTime() + 6_000_000_000L;
      while (System.nanoTime() < end || builds < 4) {
        // A new source every time: each one is compiled (the cache is off in tests, and PoCL's too).
        KernelSource source = KernelSource.of("__kernel void add(__global float* y) { y[get_global_id(0)] += "
            + builds + ".0f; }").withKernels("add");
        try (Kernel kernel = mpiBuild.mpiBuildKernel(source, 0)) {
          assertEquals(List.of("add"), kernel.kernelNames());
        }
        builds++;
      }
    } finally {
      stop.set(true);
      for (Thread thread : busy) {
        thread.join();
      }
    }
  }
}
