package org.mpibuild.programs;

import static org.jocl.CL.CL_MEM_READ_WRITE;
import static org.jocl.CL.CL_TRUE;
import static org.jocl.CL.CL_FALSE;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clEnqueueNDRangeKernel;
import static org.jocl.CL.clEnqueueReadBuffer;
import static org.jocl.CL.clEnqueueWriteBuffer;
import static org.jocl.CL.clFinish;
import static org.jocl.CL.clFlush;
import static org.jocl.CL.clReleaseMemObject;
import static org.jocl.CL.clSetKernelArg;
import static org.mpibuild.programs.OpenClChecks.check;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
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
import org.mpibuild.mpijava.MpiJava;
import org.mpibuild.opencl.OpenClKernel;
import org.mpibuild.opencl.QueueMessenger;
import org.mpibuild.spi.Communicator;

/**
 * Stream-ordered messages under mpirun with OpenCL on PoCL: a token of {@value #INTS} ints goes round the
 * ranks (a ping-pong on 2 ranks); each rank runs a kernel that adds {@code rank + 1} to every element,
 * after a random delay inside the kernel, and passes the token on. The host enqueues the whole loop at
 * once and never waits for the device or MPI inside it. Rank 0 checks the final token.
 *
 * <pre>Pipeline MODE[,MODE...] ROUNDS [SPIN [SEED [WARMUP [QUICK]]]]</pre>
 *
 * MODE is ordered, unordered or manual; several run one after the other in the job, each with its own messenger
 * and the same random delays (for the benchmark: ordered, manual, manual, ordered compares the modes under the
 * same conditions).
 *
 * SPIN sets the delay: each work item of each kernel runs between SPIN/2 and 3*SPIN/2 steps of a random
 * number generator before it adds. WARMUP (0 by default) rounds run first, unmeasured, with the same messenger and
 * buffers, from a token of zeros as the measured rounds: the stream-ordered path is Java code that the JIT compiles
 * at its first messages, on the cores the kernels run on (in ad-hoc runs without warm-up, the compiler threads took
 * about 0.4 s of CPU during a 20-round ordered loop, against 0.02 s in the manual one). QUICK (0 by default) rounds
 * run before them, unmeasured, with delays {@value #QUICK_SPIN_DIVISOR} times shorter: with a message every 80 ms,
 * the path runs too rarely for the JIT to compile it within a few rounds (it compiles a method after thousands of
 * calls), where a program that runs for long runs it compiled. With the benchmark's SPIN (20000: quick kernels of
 * about 0.4 ms on PoCL here), the quick rounds' waits still outlast the receive's spin (0.2 ms), so that the path's
 * parks are compiled too: without delays, the messages arrived while the receive spun, and the first long wait
 * made the JIT recompile (0.18 s of compiler CPU in one 60-round loop, ad hoc).
 *
 * <ul>
 *   <li>{@code ordered}: {@link QueueMessenger#sendAfter} and {@link QueueMessenger#receiveBefore}.
 *   <li>{@code unordered}: deliberately wrong: the send starts as soon as the read is enqueued, without
 *       waiting for the queue; the test expects wrong data, proving it can catch the race.
 *   <li>{@code manual}: the usual pattern, for the benchmark: finish the queue, then send; receive, then
 *       write with a blocking call, then enqueue.
 * </ul>
 *
 * Rank 0 prints, per loop, {@code RESULT mode=M ranks=N rounds=R expected=E got=G correct=B seconds=S
 * host_seconds=H jit_seconds=J}, then {@code RUN mode=M WHERE} (where the messages ran:
 * {@link QueueMessenger#operationsRun}), where S is the time until the last message arrived, H the time until the
 * host thread was free, and J the CPU time of rank 0's JIT compiler threads from just before the loop to its end
 * ({@link JitCompilers}). Each unmeasured pass (quick, then warm-up) prints
 * {@code WARMUP mode=M rounds=R spin=D correct=B seconds=S} before it.
 */
public final class Pipeline {
  static final int INTS = 4096;
  /** How many times shorter the quick warm-up rounds' delays are than the measured rounds'. */
  static final int QUICK_SPIN_DIVISOR = 200;
  static final String SOURCE = String.join("\n",
      "__kernel void advance(__global int* token, const int add, const int spin, __global uint* sink) {",
      SpinDelay.BODY,
      "  token[i] += add;",
      "}",
      "");

  private Pipeline() {}

  public static void main(String[] args) throws MPIException {
    List<String> modes = List.of(args[0].split(","));
    for (String mode : modes) {
      if (!List.of("ordered", "unordered", "manual").contains(mode)) {
        throw new IllegalArgumentException("a MODE is ordered, unordered or manual, not '" + mode + "'");
      }
    }
    int rounds = Integer.parseInt(args[1]);
    int spin = args.length > 2 ? Integer.parseInt(args[2]) : 2000;
    long seed = args.length > 3 ? Long.parseLong(args[3]) : 1;
    int warmup = args.length > 4 ? Integer.parseInt(args[4]) : 0;
    int quick = args.length > 5 ? Integer.parseInt(args[5]) : 0;
    MPI.InitThread(args, MPI.THREAD_MULTIPLE);
    int rank = MPI.COMM_WORLD.getRank();
    int size = MPI.COMM_WORLD.getSize();
    boolean correct;
    try (Communicator comm = MpiJava.communicator(MPI.COMM_WORLD);
        MpiBuild build = MpiBuild.builder().backend("opencl").build();
        Kernel kernel = build.mpiBuildKernel(KernelSource.of(SOURCE).withKernels("advance"), 0)) {
      OpenClKernel k = kernel.as(OpenClKernel.class);
      correct = true;
      for (String mode : modes) {
        // an unordered loop is meant to go wrong: only the others decide the exit status
        correct &= run(mode, rounds, warmup, quick, spin, seed, rank, size, comm, k) || mode.equals("unordered");
      }
    }
    int[] ok = {correct ? 1 : 0};
    MPI.COMM_WORLD.bcast(ok, 1, MPI.INT, 0);
    MPI.Finalize();
    System.exit(ok[0] == 1 ? 0 : 1);
  }

  /**
   * One mode's loop: its quick and its warm-up rounds, then its measured rounds, with a messenger of its own and the
   * delays that {@code seed} gives, the same for every loop of the job.
   */
  private static boolean run(String mode, int rounds, int warmup, int quick, int spin, long seed, int rank, int size,
      Communicator comm, OpenClKernel k) throws MPIException {
    cl_command_queue queue = k.queue();
    long bytes = (long) INTS * Sizeof.cl_int;
    int[] err = new int[1];
    cl_mem token = clCreateBuffer(k.context(), CL_MEM_READ_WRITE, bytes, null, err);
    check(err[0]);
    try {
      cl_mem sink = clCreateBuffer(k.context(), CL_MEM_READ_WRITE, bytes, null, err);
      check(err[0]);
      Random random = new Random(seed * 31 + rank);
      try (QueueMessenger messenger = mode.equals("manual") ? null : QueueMessenger.open(comm, queue)) {
        String where = messenger != null ? messenger.operationsRun() : "by the program";
        Loop loop = new Loop(mode, rank, size, comm, queue, token, sink, k.kernel("advance"), messenger,
            random);
        // every pass runs whatever the others found (&, not &&): the measured one prints its RESULT either way
        return (quick <= 0 || loop.run(quick, spin / QUICK_SPIN_DIVISOR, false, where))
            & (warmup <= 0 || loop.run(warmup, spin, false, where)) & loop.run(rounds, spin, true, where);
      } finally {
        clReleaseMemObject(sink);
      }
    } finally {
      clReleaseMemObject(token);
    }
  }

  /** The ring's buffers, kernel and messenger; {@link #run} times one pass of rounds on them. */
  private record Loop(String mode, int rank, int size, Communicator comm, cl_command_queue queue,
      cl_mem token, cl_mem sink, cl_kernel step, QueueMessenger messenger, Random random) {

    /**
     * Runs {@code rounds} rounds with delays around {@code spin} from a token of zeros; rank 0 checks it and, if
     * asked, prints its RESULT.
     */
    boolean run(int rounds, int spin, boolean report, String where) throws MPIException {
      long bytes = (long) INTS * Sizeof.cl_int;
      check(clEnqueueWriteBuffer(queue, token, CL_TRUE, 0, bytes, Pointer.to(new int[INTS]), 0, null, null));
      int next = (rank + 1) % size;
      int prev = (rank + size - 1) % size;
      List<CompletableFuture<Void>> pending = new ArrayList<>();
      long jit0 = JitCompilers.cpuNanos();
      MPI.COMM_WORLD.barrier();
      long t0 = System.nanoTime();
      for (int round = 0; round < rounds; round++) {
        if (rank != 0 || round > 0) {
          receive(mode, messenger, comm, queue, token, bytes, prev, pending);
        }
        // The producer: a random delay inside the kernel, so the data is ready late.
        clSetKernelArg(step, 0, Sizeof.cl_mem, Pointer.to(token));
        clSetKernelArg(step, 1, Sizeof.cl_int, Pointer.to(new int[] {rank + 1}));
        clSetKernelArg(step, 2, Sizeof.cl_int, Pointer.to(new int[] {spin / 2 + random.nextInt(spin + 1)}));
        clSetKernelArg(step, 3, Sizeof.cl_mem, Pointer.to(sink));
        check(clEnqueueNDRangeKernel(queue, step, 1, null, new long[] {INTS}, null, 0, null, null));
        send(mode, messenger, comm, queue, token, bytes, next, pending);
      }
      if (rank == 0) {
        receive(mode, messenger, comm, queue, token, bytes, prev, pending);
      }
      double hostSeconds = (System.nanoTime() - t0) / 1e9; // until the host thread was free
      // the queue first, then the futures (done by then, or failing): a thread that joined each future in turn
      // would wake at every message, on the core that the next kernel needs
      check(clFinish(queue));
      for (CompletableFuture<Void> f : pending) {
        f.join();
      }
      double seconds = (System.nanoTime() - t0) / 1e9;
      double jitSeconds = (JitCompilers.cpuNanos() - jit0) / 1e9;
      if (rank != 0) {
        return true;
      }
      int[] out = new int[INTS];
      check(clEnqueueReadBuffer(queue, token, CL_TRUE, 0, bytes, Pointer.to(out), 0, null, null));
      long expected = (long) rounds * size * (size + 1) / 2;
      int wrong = 0;
      for (int v : out) {
        wrong += v == expected ? 0 : 1;
      }
      if (report) {
        System.out.printf(Locale.ROOT, "RESULT mode=%s ranks=%d rounds=%d expected=%d got=%d wrong_elements=%d "
            + "correct=%s seconds=%.3f host_seconds=%.3f jit_seconds=%.3f%n", mode, size, rounds, expected, out[0],
            wrong, wrong == 0, seconds, hostSeconds, jitSeconds);
        System.out.println("RUN mode=" + mode + " " + where);
      } else {
        System.out.printf(Locale.ROOT, "WARMUP mode=%s rounds=%d spin=%d correct=%s seconds=%.3f%n", mode, rounds, spin,
            wrong == 0, seconds);
      }
      return wrong == 0;
    }
  }

  private static void send(String mode, QueueMessenger messenger, Communicator comm, cl_command_queue queue,
      cl_mem token, long bytes, int dest, List<CompletableFuture<Void>> pending) {
    switch (mode) {
      case "ordered" -> pending.add(messenger.sendAfter(token, bytes, dest, 7));
      case "unordered" -> {
        // Wrong on purpose: the read is enqueued but not waited for before the message leaves.
        ByteBuffer staging = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
        check(clEnqueueReadBuffer(queue, token, CL_FALSE, 0, bytes, Pointer.to(staging), 0, null, null));
        clFlush(queue);
        comm.iSend(staging, dest, 7).await();
      }
      default -> {
        ByteBuffer staging = ByteBuffer.allocateDirect((int) bytes);
        clFinish(queue);
        check(clEnqueueReadBuffer(queue, token, CL_TRUE, 0, bytes, Pointer.to(staging), 0, null, null));
        comm.iSend(staging, dest, 7).await();
      }
    }
  }

  private static void receive(String mode, QueueMessenger messenger, Communicator comm, cl_command_queue queue,
      cl_mem token, long bytes, int source, List<CompletableFuture<Void>> pending) {
    if (mode.equals("ordered")) {
      pending.add(messenger.receiveBefore(token, bytes, source, 7));
      return;
    }
    ByteBuffer staging = ByteBuffer.allocateDirect((int) bytes);
    comm.iReceive(staging, source, 7).await();
    check(clEnqueueWriteBuffer(queue, token, CL_TRUE, 0, bytes, Pointer.to(staging), 0, null, null));
  }
}
