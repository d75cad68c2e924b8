package org.mpibuild.programs;

import static org.jocl.CL.CL_MEM_READ_WRITE;
import static org.jocl.CL.CL_TRUE;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clEnqueueFillBuffer;
import static org.jocl.CL.clEnqueueNDRangeKernel;
import static org.jocl.CL.clEnqueueReadBuffer;
import static org.jocl.CL.clEnqueueWriteBuffer;
import static org.jocl.CL.clFinish;
import static org.jocl.CL.clReleaseMemObject;
import static org.jocl.CL.clSetKernelArg;
import static org.mpibuild.programs.OpenClChecks.check;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import mpi.MPI;
import mpi.MPIException;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.opencl.OpenClKernel;
import org.mpibuild.opencl.QueueMessenger;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/**
 * A loop of kernel, all-reduce, kernel under mpirun with OpenCL on PoCL, stream-ordered
 * ({@link QueueMessenger#allreduceAfter}) against the manual pattern, for the benchmark ({@code make
 * bench-allreduce}).
 *
 * <pre>AllReduceLoop ITERATIONS:BYTES[:WARMUP],... MODE[,MODE...] [WARMUP]</pre>
 *
 * For example {@code AllReduceLoop 1000:4096:2000,10:16777216:20 ordered,kernels}: for each size (bytes of
 * floats) the given number of iterations of each mode, in the order given. Each mode first runs warm-up loops of
 * {@code WARMUP} iterations unmeasured (the size's, else the last argument's, else 3) on the same buffers and,
 * stream-ordered, the same messenger as its measured loop: the messenger makes its staging buffers and persistent
 * requests at its first operations, while the manual pattern allocates its staging buffers before its loop. The
 * warm-up loop runs again until the JIT compilers were quiet during one, on every rank ({@link #QUIET_JIT_MILLIS}).
 * The whole list runs once unmeasured before the measured pass, so that the JIT has compiled what the job runs
 * before anything is measured. The benchmark runs each mode twice per size in one job, ordered, manual, manual,
 * ordered or its mirror, then {@code kernels}: each mode has a method of its own, so that running one does not
 * make the JIT recompile the other's loop. The third mode, {@code kernels}, runs the same two kernels without any
 * all-reduce: its host CPU time is what the program thread spends launching kernels in either mode. Each iteration: a kernel
 * {@code produce} writes
 * {@code x[i] = rank + 1 + ((i + it) & 7)} (the kernels' arguments but {@code it} are set once per loop); the
 * all-reduce (float, sum) replaces x by the sum over ranks;
 * a kernel {@code consume} adds x to an accumulator. At the end every rank reads the accumulator and
 * checks every element against the sum it must be, and the job fails if any rank's is wrong.
 *
 * <ul>
 *   <li>{@code ordered}: produce, {@code allreduceAfter}, consume, all enqueued without waiting; at the end
 *       one {@code clFinish} and a wait for the futures.
 *   <li>{@code manual}: produce, {@code clFinish}, a blocking read into a direct buffer, a blocking
 *       all-reduce ({@code MPI_Allreduce}: see {@link Mpi}), a blocking write, consume; at the end
 *       {@code clFinish}. Its staging buffers are allocated once per mode and size, before the warm-up.
 * </ul>
 *
 * The binding is mpi.jar's, or the FFM binding's where {@code MPI_BUILD_BINDING=ffm} ({@link ProgramWorld}).
 * Where it runs {@code ordered}, rank 0 prints where the messenger runs its collectives
 * ({@code COLLECTIVES run=...}, see
 * {@link QueueMessenger#operationsRun}) and, per size and mode, {@code RESULT mode=M bytes=B iterations=I correct=true seconds=S
 * host_cpu_seconds=H progress_cpu_seconds=P host_free_seconds=F jit_seconds=J warmup_loops=W warmup_quiet=Q}: S is the slowest rank's wall time from a barrier until its
 * queue had finished and its futures completed; H the largest CPU time of a rank's main (program) thread
 * over that span; P the largest CPU time of a rank's progress thread ({@code mpi-build-stream ...}) over
 * it (0 for manual, which has none); F the slowest rank's wall time until its main thread had enqueued
 * (ordered) or done (manual) the whole loop, before the final {@code clFinish}; J the largest CPU time of a rank's
 * JIT compiler threads from just before the barrier to the end ({@link JitCompilers}); W the warm-up loops that
 * ran before it, and Q whether the last of them was quiet (false: the warm-up stopped at {@link #MAX_WARMUP_LOOPS}).
 */
public final class AllReduceLoop {
  static final String SOURCE = String.join("\n",
      "__kernel void produce(__global float* x, const int rank, const int it) {",
      "  int i = get_global_id(0);",
      "  x[i] = (float) (rank + 1 + ((i + it) & 7));",
      "}",
      "__kernel void consume(__global const float* x, __global float* acc) {",
      "  int i = get_global_id(0);",
      "  acc[i] += x[i];",
      "}",
      "");

  /**
   * The most CPU time that the JVM's JIT compiler threads may take during a warm-up loop, on any rank, for the
   * measured loop to follow it; until then the warm-up loop runs again, up to {@link #MAX_WARMUP_LOOPS} times. Each
   * rank is bound to one core, which its compiler threads share with the loop: in ad-hoc runs after a fixed
   * warm-up, C2 ran for 35 to 40 ms of a 85 to 100 ms measured loop at 1 MiB on one rank (perf sched), stalling
   * its all-reduces by 4 to 5 ms at a time.
   */
  public static final long QUIET_JIT_MILLIS = 2;
  /** The most warm-up loops of one mode at one size, quiet or not. */
  public static final int MAX_WARMUP_LOOPS = 10;

  private AllReduceLoop() {}

  public static void main(String[] args) throws Exception {
    String[] sizes = args[0].split(",");
    List<String> modes = List.of(args[1].split(","));
    int warmup = args.length > 2 ? Integer.parseInt(args[2]) : 3;
    for (String mode : modes) {
      if (!List.of("ordered", "manual", "kernels").contains(mode)) {
        throw new IllegalArgumentException("a MODE is ordered, manual or kernels, not '" + mode + "'");
      }
    }
    boolean allCorrect = true;
    int failedRanks;
    try (Communicator comm = ProgramWorld.open(args);
        MpiBuild build = MpiBuild.builder().backend("opencl").build();
        Kernel kernel = build.mpiBuildKernel(KernelSource.of(SOURCE).withKernels("produce", "consume"), 0)) {
      OpenClKernel k = kernel.as(OpenClKernel.class);
      int rank = comm.rank();
      int size = comm.size();
      Mpi mpi = ProgramWorld.ffm() ? new SpiMpi(comm) : new MpiJar();
      if (rank == 0 && modes.contains("ordered")) {
        try (QueueMessenger m = QueueMessenger.open(comm, k.queue())) {
          System.out.println("COLLECTIVES run=" + m.operationsRun());
        }
      }
      // pass 0 runs everything once unmeasured, so that the JIT has seen every mode and size before anything is
      // measured
      for (int pass = 0; pass < 2; pass++) {
        for (String spec : sizes) {
          String[] p = spec.split(":");
          int iterations = Integer.parseInt(p[0]);
          int bytes = Integer.parseInt(p[1]);
          int warm = p.length > 2 ? Integer.parseInt(p[2]) : warmup;
          for (String mode : modes) {
            allCorrect &= run(mode, bytes / Sizeof.cl_float, warm, iterations, pass == 1, rank, size, comm, mpi, k);
          }
        }
      }
      failedRanks = comm.allReduceMax(new int[] {allCorrect ? 0 : 1})[0];
    }
    ProgramWorld.finish();
    if (failedRanks != 0) {
      System.err.println("AllReduceLoop: WRONG RESULT on some rank");
    }
    System.exit(failedRanks == 0 ? 0 : 1);
  }

  /**
   * One mode at one size: its warm-up loops, then its measured loop, on the same buffers and (ordered) the same
   * messenger. What either mode sets up once is then set up before the measured loop: the manual pattern's
   * staging buffers, and the messenger's staging buffers (at its first all-reduce) and, on the FFM binding, the
   * persistent request of a repeated all-reduce (at its second), provided the warm-up has 2 iterations or more.
   */
  private static boolean run(String mode, int count, int warmup, int iterations, boolean report, int rank,
      int size, Communicator comm, Mpi mpi, OpenClKernel k) throws MPIException {
    long bytes = (long) count * Sizeof.cl_float;
    int[] err = new int[1];
    cl_mem x = clCreateBuffer(k.context(), CL_MEM_READ_WRITE, bytes, null, err);
    check(err[0]);
    try {
      cl_mem acc = clCreateBuffer(k.context(), CL_MEM_READ_WRITE, bytes, null, err);
      check(err[0]);
      try (QueueMessenger messenger = mode.equals("ordered") ? QueueMessenger.open(comm, k.queue()) : null) {
        ByteBuffer send = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
        ByteBuffer receive = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
        long progressId = messenger != null ? progressThread() : -1;
        Loop loop = new Loop(mode, count, rank, size, mpi, k, messenger, progressId, x, acc, send, receive);
        // every loop runs whatever the ones before found (&, not &&): the measured one prints its RESULT either way
        boolean correct = true;
        int warmLoops = 0;
        boolean quiet;
        do {
          long jit0 = JitCompilers.cpuNanos();
          correct &= loop.run(warmup, false, 0, false);
          // the largest of the ranks': every rank decides the same, and runs as many loops (their collectives)
          quiet = mpi.max(new double[] {(JitCompilers.cpuNanos() - jit0) / 1e6})[0] <= QUIET_JIT_MILLIS;
          warmLoops++;
        } while (!quiet && warmLoops < MAX_WARMUP_LOOPS);
        return correct & loop.run(iterations, report, warmLoops, quiet);
      } finally {
        clReleaseMemObject(acc);
      }
    } finally {
      clReleaseMemObject(x);
    }
  }

  /** The buffers, kernels and messenger of one mode at one size; {@link #run} times one loop on them. */
  private record Loop(String mode, int count, int rank, int size, Mpi mpi, OpenClKernel k,
      QueueMessenger messenger, long progressId, cl_mem x, cl_mem acc, ByteBuffer send, ByteBuffer receive) {

    /**
     * Runs {@code iterations} iterations from a zero accumulator, checks it, and prints its RESULT if asked, with
     * the number of warm-up loops that ran before it and whether the last was quiet. Each mode's loop is a method
     * of its own, and the check another: a mode that the JIT never saw in a shared loop (the {@code kernels} loop
     * after the stream-ordered one) made it recompile that loop, on the rank's only core, during the next loops.
     */
    boolean run(int iterations, boolean report, int warmLoops, boolean warmQuiet) throws MPIException {
      cl_command_queue queue = k.queue();
      long bytes = (long) count * Sizeof.cl_float;
      check(clEnqueueFillBuffer(queue, acc, Pointer.to(new float[] {0f}), Sizeof.cl_float, 0, bytes, 0, null, null));
      check(clFinish(queue));
      cl_kernel produce = k.kernel("produce");
      cl_kernel consume = k.kernel("consume");
      setFixedArguments(produce, consume);
      long[] global = {count};
      ThreadMXBean threads = ManagementFactory.getThreadMXBean();
      List<CompletableFuture<Void>> pending = new ArrayList<>();
      long jit0 = JitCompilers.cpuNanos();
      mpi.barrier();
      long progress0 = progressId < 0 ? 0 : threads.getThreadCpuTime(progressId);
      long cpu0 = threads.getCurrentThreadCpuTime();
      long t0 = System.nanoTime();
      switch (mode) {
        case "ordered" -> orderedLoop(iterations, queue, produce, consume, global, pending);
        case "manual" -> manualLoop(iterations, queue, produce, consume, global, bytes);
        default -> kernelsLoop(iterations, queue, produce, consume, global);
      }
      double hostFree = (System.nanoTime() - t0) / 1e9; // until the program thread was free to do other work
      check(clFinish(queue));
      for (CompletableFuture<Void> f : pending) {
        f.join();
      }
      double seconds = (System.nanoTime() - t0) / 1e9;
      double hostCpu = (threads.getCurrentThreadCpuTime() - cpu0) / 1e9;
      double jitSeconds = (JitCompilers.cpuNanos() - jit0) / 1e9;
      double progressCpu = 0;
      if (progressId >= 0) {
        long p1 = threads.getThreadCpuTime(progressId);
        progressCpu = p1 < 0 ? -1 : (p1 - progress0) / 1e9;
      }
      boolean correct = accumulatorCorrect(iterations);
      double[] figures = {seconds, hostCpu, progressCpu, hostFree, jitSeconds};
      double[] max = mpi.max(figures);
      boolean everyRankCorrect = mpi.everyRank(correct);
      if (rank == 0 && report) {
        System.out.printf(Locale.ROOT, "RESULT mode=%s bytes=%d iterations=%d ranks=%d correct=%s seconds=%.6f "
            + "host_cpu_seconds=%.6f progress_cpu_seconds=%.6f host_free_seconds=%.6f jit_seconds=%.6f "
            + "warmup_loops=%d warmup_quiet=%s%n", mode, bytes, iterations, size, everyRankCorrect, max[0], max[1],
            max[2], max[3], max[4], warmLoops, warmQuiet);
      }
      return everyRankCorrect;
    }

    /** Per iteration: produce, {@code allreduceAfter}, consume, enqueued without waiting. */
    private void orderedLoop(int iterations, cl_command_queue queue, cl_kernel produce, cl_kernel consume,
        long[] global, List<CompletableFuture<Void>> pending) {
      for (int it = 0; it < iterations; it++) {
        enqueueProduce(queue, produce, global, it);
        pending.add(messenger.allreduceAfter(x, count, Datatype.FLOAT, ReduceOp.SUM));
        enqueueConsume(queue, consume, global);
      }
    }

    /** Per iteration: produce, {@code clFinish}, a blocking read, {@code MPI_Allreduce}, a blocking write, consume. */
    private void manualLoop(int iterations, cl_command_queue queue, cl_kernel produce, cl_kernel consume,
        long[] global, long bytes) throws MPIException {
      for (int it = 0; it < iterations; it++) {
        enqueueProduce(queue, produce, global, it);
        check(clFinish(queue));
        check(clEnqueueReadBuffer(queue, x, CL_TRUE, 0, bytes, Pointer.to(send), 0, null, null));
        mpi.allReduce(send, receive, count);
        check(clEnqueueWriteBuffer(queue, x, CL_TRUE, 0, bytes, Pointer.to(receive), 0, null, null));
        enqueueConsume(queue, consume, global);
      }
    }

    /** Per iteration: produce and consume with no all-reduce (consume adds this rank's own values). */
    private static void kernelsLoop(int iterations, cl_command_queue queue, cl_kernel produce, cl_kernel consume,
        long[] global) {
      for (int it = 0; it < iterations; it++) {
        enqueueProduce(queue, produce, global, it);
        enqueueConsume(queue, consume, global);
      }
    }

    /** Produce with iteration number {@code it}: the one argument that changes ({@link #setFixedArguments}). */
    private static void enqueueProduce(cl_command_queue queue, cl_kernel produce, long[] global, int it) {
      check(clSetKernelArg(produce, 2, Sizeof.cl_int, Pointer.to(new int[] {it})));
      check(clEnqueueNDRangeKernel(queue, produce, 1, null, global, null, 0, null, null));
    }

    private static void enqueueConsume(cl_command_queue queue, cl_kernel consume, long[] global) {
      check(clEnqueueNDRangeKernel(queue, consume, 1, null, global, null, 0, null, null));
    }

    /**
     * Sets the kernels' arguments that stay the same through a loop, once before it: OpenCL keeps an argument
     * until it is set again, and a command takes the values set when it is enqueued.
     */
    private void setFixedArguments(cl_kernel produce, cl_kernel consume) {
      check(clSetKernelArg(produce, 0, Sizeof.cl_mem, Pointer.to(x)));
      check(clSetKernelArg(produce, 1, Sizeof.cl_int, Pointer.to(new int[] {rank})));
      check(clSetKernelArg(consume, 0, Sizeof.cl_mem, Pointer.to(x)));
      check(clSetKernelArg(consume, 1, Sizeof.cl_mem, Pointer.to(acc)));
    }

    /**
     * Whether this rank's accumulator holds what {@code iterations} iterations must leave there:
     * acc[i] = sum over it of sum over ranks of (r + 1 + ((i + it) & 7)), or this rank's own term alone for
     * {@code kernels}. Read into the manual pattern's receive buffer: the loop is over, and it has the accumulator's
     * size.
     */
    private boolean accumulatorCorrect(int iterations) {
      FloatBuffer out = receive.clear().asFloatBuffer();
      long bytes = (long) count * Sizeof.cl_float;
      check(clEnqueueReadBuffer(k.queue(), acc, CL_TRUE, 0, bytes, Pointer.to(out), 0, null, null));
      double[] byPhase = new double[8];
      for (int ph = 0; ph < 8; ph++) {
        for (int it = 0; it < iterations; it++) {
          byPhase[ph] += mode.equals("kernels") ? rank + 1 + ((ph + it) & 7)
              : (double) size * (size + 1) / 2 + (double) size * ((ph + it) & 7);
        }
      }
      int wrong = 0;
      int firstWrong = -1;
      for (int i = 0; i < count; i++) {
        if (out.get(i) != (float) byPhase[i & 7]) {
          if (wrong++ == 0) {
            firstWrong = i;
          }
        }
      }
      if (wrong != 0) {
        System.err.printf(Locale.ROOT, "AllReduceLoop: rank %d, %s, %d bytes: %d wrong elements, element %d is %s, "
            + "expected %s%n", rank, mode, bytes, wrong, firstWrong, out.get(firstWrong),
            (float) byPhase[firstWrong & 7]);
      }
      return wrong == 0;
    }
  }

  /**
   * The loop's own MPI calls: the manual pattern's {@code MPI_Allreduce}, the barrier before a loop and the
   * reductions of its figures. Through mpi.jar's {@code MPI.COMM_WORLD} where mpi.jar is the binding: the calls
   * the program made when the figures of earlier runs were taken (in ad-hoc runs, the same calls through the
   * binding's duplicate communicator left the manual pattern's 4 KiB loop slower, 0.11-0.19 s against
   * 0.06-0.10 s, for a reason not found); through the binding's communicator on the FFM binding.
   */
  private interface Mpi {
    void barrier() throws MPIException;

    void allReduce(ByteBuffer send, ByteBuffer receive, int floats) throws MPIException;

    double[] max(double[] figures) throws MPIException;

    boolean everyRank(boolean ok) throws MPIException;
  }

  private static final class MpiJar implements Mpi {
    @Override
    public void barrier() throws MPIException {
      MPI.COMM_WORLD.barrier();
    }

    @Override
    public void allReduce(ByteBuffer send, ByteBuffer receive, int floats) throws MPIException {
      MPI.COMM_WORLD.allReduce(send, receive, floats, MPI.FLOAT, MPI.SUM);
    }

    @Override
    public double[] max(double[] figures) throws MPIException {
      double[] max = new double[figures.length];
      MPI.COMM_WORLD.allReduce(figures, max, figures.length, MPI.DOUBLE, MPI.MAX);
      return max;
    }

    @Override
    public boolean everyRank(boolean ok) throws MPIException {
      int[] all = {ok ? 1 : 0};
      MPI.COMM_WORLD.allReduce(all, 1, MPI.INT, MPI.MIN);
      return all[0] == 1;
    }
  }

  private record SpiMpi(Communicator comm) implements Mpi {
    @Override
    public void barrier() {
      comm.allReduceMax(new int[1]);
    }

    @Override
    public void allReduce(ByteBuffer send, ByteBuffer receive, int floats) {
      comm.allReduce(send, receive, floats, Datatype.FLOAT, ReduceOp.SUM); // MPI_Allreduce
    }

    @Override
    public double[] max(double[] figures) {
      ByteBuffer mine = ByteBuffer.allocateDirect(figures.length * Double.BYTES).order(ByteOrder.nativeOrder());
      mine.asDoubleBuffer().put(figures);
      ByteBuffer largest = ByteBuffer.allocateDirect(figures.length * Double.BYTES).order(ByteOrder.nativeOrder());
      comm.allReduce(mine, largest, figures.length, Datatype.DOUBLE, ReduceOp.MAX);
      double[] max = new double[figures.length];
      largest.asDoubleBuffer().get(max);
      return max;
    }

    @Override
    public boolean everyRank(boolean ok) {
      return comm.allReduceMax(new int[] {ok ? 0 : 1})[0] == 0;
    }
  }

  /** The id of the newest live thread named {@code mpi-build-stream ...}: the messenger just opened. */
  private static long progressThread() {
    long id = -1;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith("mpi-build-stream") && t.isAlive() && t.getId() > id) {
        id = t.getId();
      }
    }
    return id;
  }
}
