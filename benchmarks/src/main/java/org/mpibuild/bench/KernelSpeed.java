package org.mpibuild.bench;

import static org.jocl.CL.clFinish;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jocl.cl_kernel;
import org.jocl.cl_program;
import org.mpibuild.LaunchShape;

/**
 * How fast a program's kernels run, one process, no MPI: builds the program from source (a define of its
 * own), launches every kernel once at matrix order N (its code is generated then), then times
 * {@code ROUNDS} rounds of every kernel at its shape, each round finished before the next, and prints the
 * median round: {@code SPEED ms=...}. {@link BenchReport}'s {@code generic} mode runs it with and without
 * {@code POCL_WORK_GROUP_SPECIALIZATION=0} in the environment: specialized against generic machine code.
 *
 * <p>usage: KernelSpeed PROGRAM N SALT
 */
public final class KernelSpeed {
  static final int ROUNDS = 3;

  private KernelSpeed() {}

  public static void main(String[] args) throws Exception {
    String program = args[0];
    int n = Integer.parseInt(args[1]);
    String salt = args[2];
    try (var backend = org.mpibuild.programs.Scenarios.openCl(); Ocl cl = Ocl.open()) { // the first loads JOCL
      var source = Programs.byName(program);
      List<String> names = Bench.kernelNames(source);
      cl_program p = cl.build(source.source(), (source.options() + " -DMPI_BUILD_BENCH_SPEED=0x"
          + Integer.toHexString(salt.hashCode())).trim());
      Map<String, cl_kernel> kernels = cl.kernels(p, names);
      List<Double> rounds = new ArrayList<>();
      try (Launch.Buffers b = new Launch.Buffers(cl.context, n)) {
        for (int round = -1; round < ROUNDS; round++) {
          long t0 = System.nanoTime();
          for (LaunchShape s : Programs.shapes(program, n)) {
            Launch.enqueue(cl.queue, kernels.get(s.kernel()), s, b, n);
            Launch.check(clFinish(cl.queue), "clFinish");
          }
          if (round >= 0) {
            rounds.add((System.nanoTime() - t0) / 1e6);
          }
        }
      }
      System.out.printf(Locale.ROOT, "SPEED ms=%.3f rounds=%s specialization=%s%n", Stats.median(rounds), rounds,
          System.getenv().getOrDefault("POCL_WORK_GROUP_SPECIALIZATION", "(default)"));
    }
  }
}
