package org.mpibuild.examples.cg;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.StringJoiner;
import java.util.function.Supplier;
import org.mpibuild.BackendUnavailableException;
import org.mpibuild.Kernel;
import org.mpibuild.KernelLoadException;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.cuda.CudaKernel;
import org.mpibuild.opencl.OpenClKernel;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;
import org.mpibuild.spi.MpiBinding;

/**
 * Distributed conjugate gradients for the Poisson equation on a 2-D grid ({@link Poisson}), matrix-free with the
 * 5-point stencil, the grid's rows split across ranks ({@link RowBlocks}), on OpenCL ({@link OpenClCg}) or CUDA
 * ({@link CudaCg}): one solver ({@link CgSolver}), the device the only difference. The kernels come from one
 * collective build ({@link CgKernels}; on OpenCL it names their launch shapes); rank 0 compiles, every rank loads.
 *
 * <pre>bin/mpi-build run -np 4 -cp examples/target/mpi-build-examples.jar:examples/target/lib/* \
 *     org.mpibuild.examples.cg.Cg --n 256 --mode ordered</pre>
 *
 * <p>Options:
 * <ul>
 *   <li>{@code --backend opencl|cuda}: the device (default {@code opencl}); where it cannot run (no OpenCL
 *       platform, no CUDA driver or GPU), every rank says why and the job fails;
 *   <li>{@code --mode ordered|manual|ordered,manual}: how ranks communicate ({@link OrderedExchange},
 *       {@link ManualExchange}); with both, each runs in turn on the same kernels (default {@code ordered});
 *   <li>{@code --n NX}, {@code --ny NY}: the grid's interior points per row and rows (default 128, and NY = NX);
 *   <li>{@code --check-every K}: the host reads the residual every K iterations (default 10);
 *   <li>{@code --tol T}: the relative residual to reach (default 1e-8; 0 runs {@code --max-iterations});
 *   <li>{@code --max-iterations M} (default 4 × max(NX, NY) + 100);
 *   <li>{@code --build collective|each-rank}: one collective build with the launch shapes named, or every rank
 *       compiling the same source on its own without them, as a program does without mpi-build (default
 *       collective);
 *   <li>{@code --verify}: rank 0 also solves the whole grid on the host ({@link HostCg}) and compares the
 *       residual histories; the job fails if they differ by more than {@link #TOLERANCE} (relative);
 *   <li>{@code --history}: rank 0 prints the relative residual of every iteration;
 *   <li>{@code --warmup W}: W iterations of each mode first, unmeasured (default 0);
 *   <li>{@code --plot FILE.png}: rank 0 draws every mode's relative residual against the iteration, on a log scale
 *       ({@link ResidualPlot});
 *   <li>{@code --fault sum-late}: a deliberate ordering mistake ({@link CgSolver.Fault#SUM_LATE}), to show that
 *       {@code --verify} notices.
 * </ul>
 *
 * <p>Rank 0 prints one {@code CG-FIRST} line (the time from start, after MPI's initialization, to the end of the
 * first iteration, the build included), then per mode a {@code CG} line: iterations, the final relative
 * residual, the largest error against the exact solution, milliseconds per iteration (the slowest rank's, the
 * first iteration left out), and the host CPU per iteration (the program's thread, and the messenger's progress
 * thread). The binding is mpi.jar's where it is installed, else the FFM binding's ({@code MPI_BUILD_BINDING}
 * chooses), at {@code MPI_THREAD_MULTIPLE}.
 */
public final class Cg {
  /** The largest relative difference {@code --verify} allows between the residual histories. */
  public static final double TOLERANCE = 1e-6;
  /** The most warm-up iterations {@code --warmup} takes (the JIT needs thousands to compile a mode's loop). */
  static final int MAX_WARMUP = 1_000_000;

  private Cg() {}

  /**
   * Prints one line in one write, so that a launcher that marks each rank's output (MPICH's {@code -prepend-rank})
   * or mixes ranks' output never splits it: {@code printf} writes in pieces.
   */
  static void say(String format, Object... args) {
    System.out.println(String.format(Locale.ROOT, format, args));
  }

  /** The parsed command line. */
  record Options(String backend, List<String> modes, int nx, int ny, Stopping stopping, boolean collective,
      boolean verify, boolean history, int warmup, CgSolver.Fault fault, Path plot) {

    static Options parse(String[] args) {
      String backend = "opencl";
      List<String> modes = List.of("ordered");
      int nx = 128;
      int ny = -1;
      int checkEvery = 10;
      double tol = 1e-8;
      int maxIterations = -1;
      boolean collective = true;
      boolean verify = false;
      boolean history = false;
      int warmup = 0;
      CgSolver.Fault fault = CgSolver.Fault.NONE;
      Path plot = null;
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        if (a.equals("--verify")) {
          verify = true;
          continue;
        }
        if (a.equals("--history")) {
          history = true;
          continue;
        }
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException("option " + a + " needs a value, or is unknown");
        }
        String v = args[++i];
        switch (a) {
          case "--backend" -> backend = oneOf("--backend", v, "opencl", "cuda");
          case "--mode" -> modes = List.of(v.split(","));
          case "--n" -> nx = Integer.parseInt(v);
          case "--ny" -> ny = Integer.parseInt(v);
          case "--check-every" -> checkEvery = Integer.parseInt(v);
          case "--tol" -> tol = Double.parseDouble(v);
          case "--max-iterations" -> maxIterations = Integer.parseInt(v);
          case "--warmup" -> warmup = Integer.parseInt(v);
          case "--plot" -> plot = Path.of(v);
          case "--build" -> collective = oneOf("--build", v, "collective", "each-rank").equals("collective");
          case "--fault" -> {
            oneOf("--fault", v, "sum-late");
            fault = CgSolver.Fault.SUM_LATE;
          }
          default -> throw new IllegalArgumentException("unknown option " + a);
        }
      }
      modes.forEach(m -> oneOf("--mode", m, "ordered", "manual"));
      ny = ny < 0 ? nx : ny;
      if (maxIterations < 0) {
        maxIterations = 4 * Math.max(nx, ny) + 100;
      }
      if (warmup < 0 || warmup > MAX_WARMUP) {
        throw new IllegalArgumentException("--warmup " + warmup + " must be between 0 and " + MAX_WARMUP);
      }
      return new Options(backend, modes, nx, ny, new Stopping(tol, checkEvery, maxIterations), collective, verify, history,
          warmup, fault, plot);
    }

    /** {@code value}, if it is one of {@code allowed}; else the error naming the option and the value. */
    private static String oneOf(String option, String value, String... allowed) {
      if (!List.of(allowed).contains(value)) {
        throw new IllegalArgumentException(option + " is " + String.join(" or ", allowed) + (option.equals("--mode")
            ? " (or both, comma-separated)" : "") + ", not '" + value + "'");
      }
      return value;
    }
  }

  /** What one mode's solve found on this rank; the figures are reduced over ranks before printing. */
  record Run(String mode, int iterations, double[] history, double error, double seconds, double hostCpu,
      double helperCpu, String where) {}

  /**
   * Runs the solver.
   *
   * @param args the options (see the class comment)
   */
  public static void main(String[] args) {
    Options o;
    try {
      o = Options.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("Cg: " + e.getMessage());
      System.exit(2);
      return;
    }
    boolean ok;
    try (Communicator world = openWorld()) {
      ok = run(world, o);
    } catch (CannotRun e) {
      System.err.println("Cg: " + e.getMessage());
      ok = false;
    }
    System.exit(ok ? 0 : 1);
  }

  /** The backend that {@code --backend} names cannot run on this rank; the message says why. */
  static final class CannotRun extends RuntimeException {
    CannotRun(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * Builds the kernels for {@code --backend}, then solves in each mode of {@code o}; prints on rank 0; returns
   * whether every check passed.
   *
   * @throws CannotRun if the backend cannot run on this rank (no platform, driver or device), saying why
   */
  static boolean run(Communicator world, Options o) {
    Poisson problem = new Poisson(o.nx(), o.ny());
    RowBlocks blocks = new RowBlocks(o.ny(), world.size());
    world.allReduceMax(new int[1]); // every rank starts the clock together
    long t0 = System.nanoTime();
    try (MpiBuild build = runsHere(o, () -> open(world, o));
        Kernel kernel = runsHere(o, () -> build.mpiBuildKernel(request(o), 0));
        CgDevice<?> device = device(o, kernel)) {
      return solveAll(world, device, problem, blocks, o, t0, (System.nanoTime() - t0) / 1e9);
    }
  }

  /** The build: collective on {@code world}, or local to this rank without a cache ({@code --build each-rank}). */
  private static MpiBuild open(Communicator world, Options o) {
    return o.collective() ? MpiBuild.builder().backend(o.backend()).communicator(world).build()
        : MpiBuild.builder().backend(o.backend()).local().set("MPI_BUILD_CACHE", "off").build();
  }

  /** @return the request of {@code --backend}: on OpenCL with the launch shapes named for a collective build */
  static KernelSource request(Options o) {
    return o.backend().equals("cuda") ? CgKernels.cudaRequest() : CgKernels.request(o.collective());
  }

  private static CgDevice<?> device(Options o, Kernel kernel) {
    return o.backend().equals("cuda") ? new CudaCg(kernel.as(CudaKernel.class))
        : new OpenClCg(kernel.as(OpenClKernel.class));
  }

  /**
   * Runs a step of the build; a backend that cannot run here becomes {@link CannotRun}, naming the option, then,
   * in mpi-build's words, the ranks and why.
   */
  private static <T> T runsHere(Options o, Supplier<T> step) {
    try {
      return step.get();
    } catch (BackendUnavailableException | KernelLoadException e) {
      throw new CannotRun("--backend " + o.backend() + " cannot run: " + e.getMessage(), e);
    }
  }

  /** Every mode of {@code o} in turn on {@code device}, then the reports, the check and the plot. */
  private static <B> boolean solveAll(Communicator world, CgDevice<B> device, Poisson problem, RowBlocks blocks,
      Options o, long t0, double buildSeconds) {
    int rank = world.rank();
    boolean ok = true;
    List<Run> runs = new ArrayList<>();
    for (String mode : o.modes()) {
      runs.add(solve(world, device, problem, blocks, o, mode, runs.isEmpty() ? t0 : -1, buildSeconds));
    }
    HostCg.Result reference = rank == 0 && o.verify() ? HostCg.solve(problem, o.stopping()) : null;
    for (Run run : runs) {
      ok &= report(world, run, o, reference);
    }
    if (rank == 0 && o.plot() != null) {
      ok &= plot(runs, o, world.size());
    }
    return ok;
  }

  /**
   * One solve in {@code mode}: set-up, the first iteration (after which, when {@code t0} is not -1, rank 0 prints
   * the time to it), then the rest, timed.
   */
  private static <B> Run solve(Communicator world, CgDevice<B> device, Poisson problem, RowBlocks blocks,
      Options o, String mode, long t0, double buildSeconds) {
    int rank = world.rank();
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    if (o.warmup() > 0) { // unmeasured iterations on buffers of their own; the solve below starts afresh
      try (CgSolver<B> cg = new CgSolver<>(device, problem, blocks, rank, Math.max(o.warmup(),
          o.stopping().maxIterations()));
          Exchange<B> ex = exchange(mode, world, device, problem)) {
        cg.start(ex);
        for (int it = 1; it <= o.warmup(); it++) {
          cg.iteration(it, ex, o.fault());
        }
        ex.finish();
      }
    }
    try (CgSolver<B> cg = new CgSolver<>(device, problem, blocks, rank, o.stopping().maxIterations());
        Exchange<B> ex = exchange(mode, world, device, problem)) {
      String where = ex instanceof OrderedExchange<B> oe ? oe.operationsRun() : "host";
      cg.start(ex);
      ex.finish();
      double rr0 = cg.readRr(0);
      cg.iteration(1, ex, o.fault());
      ex.finish();
      double rr = cg.readRr(1);
      if (t0 >= 0) {
        double first = max(world, (System.nanoTime() - t0) / 1e9);
        double built = max(world, buildSeconds);
        if (rank == 0) {
          say("CG-FIRST build=%s ranks=%d first_iteration_ms=%.1f build_ms=%.1f backend=%s",
              o.collective() ? "collective" : "each-rank", world.size(), first * 1e3, built * 1e3, o.backend());
        }
      }
      world.allReduceMax(new int[1]); // the iterations start together; no stream collective is in flight
      long cpu0 = threads.getCurrentThreadCpuTime();
      long helper0 = ex.helperCpuNanos();
      long start = System.nanoTime();
      int it = 1;
      while (!o.stopping().stops(it, rr, rr0)) {
        it++;
        cg.iteration(it, ex, o.fault());
        if (o.stopping().checks(it)) {
          ex.finish(); // the stream operations first: never block on the queue while a gate is shut (docs/cg.md)
          rr = cg.readRr(it);
          ex.settle();
        }
      }
      ex.finish();
      double seconds = (System.nanoTime() - start) / 1e9;
      double hostCpu = (threads.getCurrentThreadCpuTime() - cpu0) / 1e9;
      double helperCpu = (ex.helperCpuNanos() - helper0) / 1e9;
      double error = problem.maxError(cg.x(), blocks.first(rank));
      return new Run(mode, it, cg.history(it), error, seconds, hostCpu, helperCpu, where);
    }
  }

  /**
   * Draws every run's relative residual against the iteration into {@code --plot}'s file ({@link ResidualPlot});
   * returns whether it could.
   */
  private static boolean plot(List<Run> runs, Options o, int ranks) {
    List<String> labels = ResidualPlot.labels(runs.stream().map(Run::mode).toList());
    List<ResidualPlot.Series> series = new ArrayList<>();
    for (int i = 0; i < runs.size(); i++) {
      series.add(new ResidualPlot.Series(labels.get(i), ResidualPlot.relative(runs.get(i).history())));
    }
    String title = String.format(Locale.ROOT, "Conjugate gradients, Poisson on %dx%d, %d ranks: ||r|| / ||r0||", o.nx(),
        o.ny(), ranks);
    try {
      ResidualPlot.write(title, series, o.plot());
      System.out.println("CG-PLOT file=" + o.plot());
      return true;
    } catch (IOException e) {
      System.err.println("Cg: --plot " + o.plot() + ": " + e);
      return false;
    }
  }

  private static <B> Exchange<B> exchange(String mode, Communicator world, CgDevice<B> device, Poisson problem) {
    return mode.equals("ordered") ? new OrderedExchange<>(world, device)
        : new ManualExchange<>(world, device, (long) problem.nx() * Double.BYTES);
  }

  /** Reduces a run's figures over ranks; rank 0 prints them and, if asked, the history and its check. */
  private static boolean report(Communicator world, Run run, Options o, HostCg.Result reference) {
    double[] max = max(world, run.error(), run.seconds(), run.hostCpu(), run.helperCpu());
    boolean ok = true;
    if (world.rank() == 0) {
      double[] h = run.history();
      double per = run.iterations() > 1 ? 1e3 / (run.iterations() - 1) : 0;
      double residual = Stopping.relative(h[h.length - 1], h[0]);
      say("CG mode=%s ranks=%d grid=%dx%d iterations=%d residual=%.3e error=%.3e "
          + "ms_per_iteration=%.4f host_cpu_ms_per_iteration=%.4f helper_cpu_ms_per_iteration=%.4f converged=%s "
          + "backend=%s run=%s", run.mode(), world.size(), o.nx(), o.ny(), run.iterations(), residual, max[0],
          max[1] * per, max[2] * per, max[3] * per, residual <= o.stopping().tolerance(), o.backend(), run.where());
      if (o.history()) {
        StringJoiner line = new StringJoiner(" ", "CG-HISTORY mode=" + run.mode() + " ", "");
        for (double rr : h) {
          line.add(String.format(Locale.ROOT, "%.17g", Stopping.relative(rr, h[0])));
        }
        System.out.println(line);
      }
      if (reference != null) {
        ok = verify(run, reference);
      }
    }
    return everyRank(world, ok);
  }

  /**
   * Compares a run's residual history with the host's: the same iterations, and every relative residual within
   * {@link #TOLERANCE} of the host's, relative to it (with a floor of {@code 1e-10} of the first residual, where
   * rounding dominates).
   */
  static boolean verify(Run run, HostCg.Result reference) {
    double[] h = run.history();
    double[] ref = reference.history();
    double worst = 0;
    int at = -1;
    for (int i = 0; i < Math.min(h.length, ref.length); i++) {
      double a = Stopping.relative(h[i], h[0]);
      double b = Stopping.relative(ref[i], ref[0]);
      double diff = Math.abs(a - b) / Math.max(b, 1e-10);
      if (!(diff <= worst)) {
        worst = diff;
        at = i;
      }
    }
    boolean ok = h.length == ref.length && worst <= TOLERANCE;
    say("CG-VERIFY mode=%s iterations=%d reference_iterations=%d max_rel_diff=%.3e "
        + "at_iteration=%d tolerance=%.1e ok=%s", run.mode(), h.length - 1, ref.length - 1, worst, at, TOLERANCE, ok);
    return ok;
  }

  /** @return the largest of each value over every rank */
  static double[] max(Communicator world, double... values) {
    ByteBuffer mine = ByteBuffer.allocateDirect(values.length * Double.BYTES).order(ByteOrder.nativeOrder());
    ByteBuffer out = ByteBuffer.allocateDirect(values.length * Double.BYTES).order(ByteOrder.nativeOrder());
    mine.asDoubleBuffer().put(values);
    world.allReduce(mine, out, values.length, Datatype.DOUBLE, ReduceOp.MAX);
    double[] max = new double[values.length];
    out.asDoubleBuffer().get(max);
    return max;
  }

  private static double max(Communicator world, double value) {
    return max(world, new double[] {value})[0];
  }

  private static boolean everyRank(Communicator world, boolean ok) {
    return world.allReduceMax(new int[] {ok ? 0 : 1})[0] == 0;
  }

  /**
   * The world communicator at {@code MPI_THREAD_MULTIPLE}: through the binding {@code MPI_BUILD_BINDING} names,
   * else mpi.jar's where it can run, else the FFM binding's.
   */
  static Communicator openWorld() {
    String id = System.getenv().getOrDefault("MPI_BUILD_BINDING", "auto");
    List<String> ids = id.isBlank() || id.equals("auto") ? List.of("mpijava", "ffm") : List.of(id);
    StringJoiner why = new StringJoiner("; ");
    for (String candidate : ids) {
      MpiBinding binding = MpiBinding.find(candidate);
      String no = binding == null ? "not on the class path" : binding.unavailable();
      if (no == null) {
        return binding.openWorld(true);
      }
      why.add(candidate + ": " + no);
    }
    throw new IllegalStateException("no MPI binding can run (" + why + ")");
  }
}
