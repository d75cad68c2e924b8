package org.mpibuild.programs;

import org.mpibuild.testkit.DelegatingBackend;
import static org.jocl.CL.CL_MEM_READ_WRITE;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.CL_TRUE;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clEnqueueNDRangeKernel;
import static org.jocl.CL.clEnqueueReadBuffer;
import static org.jocl.CL.clReleaseMemObject;
import static org.jocl.CL.clSetKernelArg;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.ServiceLoader;
import mpi.MPI;
import mpi.MPIException;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.mpibuild.Kernel;
import org.mpibuild.KernelFuture;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.opencl.OpenClKernel;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.BackendProvider;

/**
 * The scale features under mpirun, with the OpenCL backend on PoCL. The program initializes MPI itself, at
 * the thread level it is asked for, and finalizes it. Each rank prints one line:
 *
 * <pre>RESULT mode=MODE rank=R size=N ok=B key=value...</pre>
 *
 * <ul>
 *   <li>{@code async LEVEL}: three asynchronous builds while the rank computes, completed in reverse order.
 *   <li>{@code batch K}: K kernels in one batch build; rank 0 also prints the time from a barrier until every
 *       rank holds every kernel ({@code batch_seconds}, the benchmark's figure).
 *   <li>{@code hetero}: even and odd ranks claim different targets; each must get its own target's binary.
 * </ul>
 */
public final class Scale {
  private Scale() {}

  /** Kernel i adds i to every element: distinct binaries, each checkable. */
  public static KernelSource kernel(int i, String salt) {
    return KernelSource.of("__kernel void add" + i + "(__global float* y) {\n  y[get_global_id(0)] += " + i
        + ".0f;\n}\n").withKernels("add" + i).withOptions("-DSALT=" + salt);
  }

  public static void main(String[] args) throws MPIException {
    String mode = args[0];
    int level = switch (mode.equals("async") ? args[1] : "SINGLE") {
      case "FUNNELED" -> MPI.THREAD_FUNNELED;
      case "SERIALIZED" -> MPI.THREAD_SERIALIZED;
      case "MULTIPLE" -> MPI.THREAD_MULTIPLE;
      default -> MPI.THREAD_SINGLE;
    };
    int provided = MPI.InitThread(args, level);
    int rank = MPI.COMM_WORLD.getRank();
    int size = MPI.COMM_WORLD.getSize();
    String line;
    boolean ok;
    try {
      switch (mode) {
        case "async" -> line = async(provided);
        case "batch" -> line = batch(Integer.parseInt(args[1]), args.length > 2 ? args[2] : "it");
        case "hetero" -> line = hetero(rank);
        default -> throw new IllegalArgumentException("unknown mode " + mode);
      }
      ok = line.contains("ok=true");
    } catch (RuntimeException e) {
      line = "ok=false error=" + String.valueOf(e).replace('\n', ' ');
      ok = false;
    }
    System.out.println("RESULT mode=" + mode + " rank=" + rank + " size=" + size + " " + line);
    System.out.flush();
    int[] good = {ok ? 1 : 0};
    MPI.COMM_WORLD.allReduce(good, 1, MPI.INT, MPI.MIN);
    MPI.Finalize();
    System.exit(good[0] == 1 ? 0 : 1);
  }

  private static String async(int provided) {
    try (MpiBuild build = MpiBuild.create()) {
      List<KernelFuture> futures = new ArrayList<>();
      long t0 = System.nanoTime();
      for (int i = 0; i < 3; i++) {
        futures.add(build.mpiBuildKernelAsync(kernel(i, "async"), 0));
      }
      long submitMillis = (System.nanoTime() - t0) / 1_000_000;
      // Compute while the kernels build, touching the futures now and then (that is what makes progress
      // when MPI calls must stay on this thread).
      int doneDuringCompute = 0;
      double sum = 0;
      // Until all three are done; the bound only ends a job whose builds never complete (on busy shared cores
      // three shaped compiles took more than 6 s).
      long until = System.nanoTime() + 120_000_000_000L;
      while (System.nanoTime() < until && doneDuringCompute < 3) {
        for (int j = 0; j < 200_000; j++) {
          sum += Math.sqrt(j);
        }
        doneDuringCompute = 0;
        for (KernelFuture f : futures) {
          doneDuringCompute += f.test() ? 1 : 0;
        }
      }
      int verified = 0;
      for (int i = futures.size() - 1; i >= 0; i--) {
        try (Kernel k = futures.get(i).join()) {
          verified += verify(k.as(OpenClKernel.class), "add" + i, i) ? 1 : 0;
        }
      }
      long compiles = build.statistics().compiles();
      boolean ok = verified == 3 && compiles == 3 && doneDuringCompute >= 1 && sum > 0;
      return String.format(Locale.ROOT, "ok=%s provided=%s progress=%s submit_ms=%d done_during_compute=%d "
          + "verified=%d compiles=%d", ok, levelName(provided), build.asyncProgress(), submitMillis, doneDuringCompute,
          verified, compiles);
    }
  }

  private static String batch(int k, String salt) throws MPIException {
    List<KernelSource> requests = new ArrayList<>();
    for (int i = 0; i < k; i++) {
      requests.add(kernel(i, salt));
    }
    try (MpiBuild build = MpiBuild.create()) {
      MPI.COMM_WORLD.barrier();
      long t0 = System.nanoTime();
      List<Kernel> kernels = build.mpiBuildKernels(requests);
      double[] seconds = {(System.nanoTime() - t0) / 1e9};
      MPI.COMM_WORLD.allReduce(seconds, 1, MPI.DOUBLE, MPI.MAX);
      int verified = 0;
      for (int i = 0; i < kernels.size(); i++) {
        try (Kernel kernel = kernels.get(i)) {
          verified += verify(kernel.as(OpenClKernel.class), "add" + i, i) ? 1 : 0;
        }
      }
      long compiles = build.statistics().compiles();
      boolean ok = verified == k && compiles == k;
      return String.format(Locale.ROOT, "ok=%s kernels=%d loaded=%d verified=%d compiles=%d batch_seconds=%.3f",
          ok, k, kernels.size(), verified, compiles, seconds[0]);
    }
  }

  private static String hetero(int rank) {
    int group = rank % 2;
    Backend opencl = null;
    for (BackendProvider p : ServiceLoader.load(BackendProvider.class)) {
      if (p.id().equals("opencl")) {
        opencl = p.open(org.mpibuild.spi.SettingSource.ofProcess());
      }
    }
    KernelSource which = KernelSource.of("__kernel void which(__global float* y) {\n"
        + "  y[get_global_id(0)] += (float) TARGET_GROUP;\n}\n").withKernels("which");
    try (MpiBuild build = MpiBuild.builder().backend(new GroupTarget(opencl, group)).build()) {
      int groups = build.jobTargets().size();
      try (Kernel k = build.mpiBuildKernel(which, 0)) {
        boolean own = k.target().endsWith("; group=" + group);
        boolean verified = verify(k.as(OpenClKernel.class), "which", group);
        int builtOn = k.stats().root();
        long compiles = build.statistics().compiles();
        boolean ok = own && verified && builtOn % 2 == group && compiles == Math.min(2, build.size());
        return String.format(Locale.ROOT, "ok=%s groups=%d target_group=%d built_on=%d own_target=%s verified=%s "
            + "compiles=%d", ok, groups, group, builtOn, own, verified, compiles);
      }
    }
  }

  /**
   * The OpenCL backend claiming one of two targets, as two kinds of device would: the target names the
   * group, and a compile for it defines TARGET_GROUP, so each group's binary computes something else.
   */
  static final class GroupTarget extends DelegatingBackend {
    private final int group;

    GroupTarget(Backend inner, int group) {
      super(inner);
      this.group = group;
    }

    @Override
    public String target() {
      return inner.target() + "; group=" + group;
    }

    @Override
    public org.mpibuild.spi.Compilation compile(KernelSource request) {
      return inner.compile(request.withOptions(request.options() + " -DTARGET_GROUP=" + group));
    }
  }

  /** Runs kernel {@code name} (one float buffer) on zeros and checks every element equals {@code expected}. */
  static boolean verify(OpenClKernel k, String name, int expected) {
    int n = 64;
    int[] err = new int[1];
    cl_mem y = clCreateBuffer(k.context(), CL_MEM_READ_WRITE, (long) Sizeof.cl_float * n, null, err);
    try {
      float[] out = new float[n];
      org.jocl.CL.clEnqueueWriteBuffer(k.queue(), y, CL_TRUE, 0, (long) Sizeof.cl_float * n, Pointer.to(out), 0,
          null, null);
      cl_kernel kernel = k.kernel(name);
      clSetKernelArg(kernel, 0, Sizeof.cl_mem, Pointer.to(y));
      int rc = clEnqueueNDRangeKernel(k.queue(), kernel, 1, null, new long[] {n}, null, 0, null, null);
      if (rc != CL_SUCCESS) {
        throw new IllegalStateException("clEnqueueNDRangeKernel: " + CL.stringFor_errorCode(rc));
      }
      clEnqueueReadBuffer(k.queue(), y, CL_TRUE, 0, (long) Sizeof.cl_float * n, Pointer.to(out), 0, null, null);
      for (float v : out) {
        if (v != expected) {
          return false;
        }
      }
      return true;
    } finally {
      clReleaseMemObject(y);
    }
  }

  private static String levelName(int provided) {
    if (provided == MPI.THREAD_MULTIPLE) {
      return "MULTIPLE";
    } else if (provided == MPI.THREAD_SERIALIZED) {
      return "SERIALIZED";
    } else if (provided == MPI.THREAD_FUNNELED) {
      return "FUNNELED";
    }
    return "SINGLE";
  }
}
