package org.mpibuild.programs;

import java.util.ArrayList;
import java.util.List;
import org.mpibuild.Kernel;
import org.mpibuild.KernelFuture;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.examples.Saxpy;
import org.mpibuild.opencl.OpenClKernel;

/**
 * Collective builds through the library's API only (success with a run-checked kernel, compile failure,
 * mismatch, a batch, an asynchronous build; no {@code mpi.jar} class is touched), so that it runs on any
 * binding and any MPI: the FFM binding under Open MPI's mpirun or MPICH's mpiexec, or mpi.jar (the version
 * matrix, MatrixIT). The library initializes MPI and finalizes it at exit. Each rank prints one line per scenario:
 *
 * <pre>RESULT scenario=NAME rank=R size=N outcome=ok|EXCEPTION verified=B binding=DESCRIPTION message=ONE-LINE</pre>
 */
public final class Portable {
  private Portable() {}

  public static void main(String[] args) {
    try (MpiBuild world = MpiBuild.builder().backend("opencl").noCache().build()) {
      int rank = world.rank();
      int size = world.size();
      report(world, "success", () -> {
        try (Kernel k = world.mpiBuildKernel(Saxpy.REQUEST, size - 1)) {
          return Saxpy.runAndVerify(k.as(OpenClKernel.class), rank, 1 << 12);
        }
      });
      report(world, "compile-failure", () -> {
        world.mpiBuildKernel("__kernel void broken(__global float* y) { y[0] = undeclared_value; }", 0).close();
        return true;
      });
      KernelSource mine = size > 1 && rank == size - 1 ? Saxpy.REQUEST.withOptions("-cl-mad-enable") : Saxpy.REQUEST;
      report(world, "mismatch", () -> {
        world.mpiBuildKernel(mine, 0).close();
        return true;
      });
      report(world, "batch", () -> {
        List<KernelSource> requests = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
          requests.add(Scale.kernel(i, "portable"));
        }
        boolean all = true;
        long before = world.statistics().compiles();
        List<Kernel> kernels = world.mpiBuildKernels(requests);
        for (int i = 0; i < kernels.size(); i++) {
          try (Kernel k = kernels.get(i)) {
            all &= Scale.verify(k.as(OpenClKernel.class), "add" + i, i);
          }
        }
        return all && world.statistics().compiles() - before == 4;
      });
      report(world, "async", () -> {
        // The build goes on in the background while this thread computes; then every rank runs the kernel.
        KernelFuture future = world.mpiBuildKernelAsync(Saxpy.REQUEST, 0);
        while (!future.test()) {
          Thread.sleep(1);
        }
        try (Kernel k = future.join()) {
          return Saxpy.runAndVerify(k.as(OpenClKernel.class), rank, 1 << 12);
        }
      });
    }
  }

  interface Scenario {
    boolean run() throws Exception;
  }

  private static void report(MpiBuild world, String name, Scenario s) {
    String outcome;
    boolean verified = false;
    String message = "";
    try {
      verified = s.run();
      outcome = "ok";
    } catch (Exception e) {
      outcome = e.getClass().getSimpleName();
      message = String.valueOf(e.getMessage()).lines().findFirst().orElse("");
    }
    System.out.println("RESULT scenario=" + name + " rank=" + world.rank() + " size=" + world.size() + " outcome="
        + outcome + " verified=" + verified + " binding=" + world.communicator().toString().replace(' ', '_')
        + " message=" + message);
    System.out.flush();
  }
}
