package org.mpibuild.programs;

import static org.jocl.CL.CL_COMPLETE;
import static org.jocl.CL.CL_EVENT_COMMAND_EXECUTION_STATUS;
import static org.jocl.CL.CL_FALSE;
import static org.jocl.CL.CL_MEM_READ_WRITE;
import static org.jocl.CL.CL_TRUE;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clCreateCommandQueueWithProperties;
import static org.jocl.CL.clCreateUserEvent;
import static org.jocl.CL.clEnqueueMarkerWithWaitList;
import static org.jocl.CL.clEnqueueNDRangeKernel;
import static org.jocl.CL.clEnqueueReadBuffer;
import static org.jocl.CL.clEnqueueWriteBuffer;
import static org.jocl.CL.clFinish;
import static org.jocl.CL.clFlush;
import static org.jocl.CL.clGetEventInfo;
import static org.jocl.CL.clReleaseCommandQueue;
import static org.jocl.CL.clReleaseEvent;
import static org.jocl.CL.clReleaseMemObject;
import static org.jocl.CL.clSetKernelArg;
import static org.jocl.CL.clSetUserEventStatus;
import static org.mpibuild.programs.OpenClChecks.check;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import mpi.MPIException;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_event;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.jocl.cl_queue_properties;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.opencl.OpenClKernel;
import org.mpibuild.opencl.QueueMessenger;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/**
 * Stream-ordered collectives under mpirun with OpenCL on PoCL ({@link QueueMessenger#bcastAfter},
 * {@link QueueMessenger#allreduceAfter}). Every rank enqueues the whole loop at once and waits only at the
 * end; each rank's queue is slow by a random delay (a busy kernel, or a user event a timer holds) before
 * each collective. After each collective a copy of the buffer to the host (a marker) and, for int sums, a
 * kernel that counts wrong elements check that the work queued after it saw the result.
 *
 * <pre>StreamCollectives PART[,PART...] ROUNDS [SPIN [SEED]]</pre>
 *
 * <ul>
 *   <li>{@code bcast}: broadcasts from a root that changes every round.
 *   <li>{@code allreduce}: all-reduces of every type and op, in turn.
 *   <li>{@code allreduce-repeat}: the same all-reduce (int sum of the same size) every round: where the binding
 *       has persistent collectives, every use after the first starts one persistent request.
 *   <li>{@code two-queues}: two messengers on two queues of one rank, one communicator: an all-reduce on the
 *       first, a broadcast on the second, an all-reduce on the first, the first or the second queue slow.
 *   <li>{@code fail-bcast}, {@code fail-allreduce}: the last rank's read fails (its buffer is too small): every
 *       rank must fail with the same message naming that rank.
 *   <li>{@code mismatch}: the last rank all-reduces half the count of the others: every rank must fail with
 *       the same message naming that rank and the count, before any data moves.
 *   <li>{@code absent}: the last rank never enqueues the all-reduce; rank 0 must name it at the deadline
 *       (2 s) and abort the job.
 *   <li>{@code close}: the last rank closes its messenger with a broadcast from it not yet started (its queue
 *       held): every rank must fail at once with the same message naming that rank, and nobody aborts.
 * </ul>
 *
 * Each rank prints {@code CHECK part=P rank=R ok=B detail=...}; a binding without typed reductions prints
 * {@code UNSUPPORTED part=P reason=...} instead. After {@code bcast} and the all-reduce parts each rank also
 * prints which collectives it used: {@code PATH part=P rank=R persistent=N of=M binding=... run=...}, N of the M
 * collectives having started a persistent collective, and the binding's
 * {@link Communicator#persistentCollectives} ("none: non-blocking ..." where it has none).
 *
 * <p>The MPI binding is mpi.jar's, unless {@code MPI_BUILD_BINDING=ffm} (then the FFM binding, Java 22+).
 */
public final class StreamCollectives {
  static final int N = 4096;
  static final String SOURCE = String.join("\n",
      "__kernel void delay(int spin, __global uint* sink) {",
      SpinDelay.BODY,
      "}",
      "__kernel void verify(__global const int* buf, int base, __global int* errors) {",
      "  int i = get_global_id(0);",
      "  if (buf[i] != base * (i + 1)) { atomic_inc(errors); }",
      "}",
      "");

  final Communicator comm;
  private final OpenClKernel k;
  final int rank;
  final int size;
  /** The parts where collectives fail or are misused. */
  private final StreamCollectiveFaults faults = new StreamCollectiveFaults(this);
  private final int spin;
  private final Random random;
  private final cl_mem sink;
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "user-event timer");
    t.setDaemon(true);
    return t;
  });
  /** Host memory the queue still reads or writes: kept alive until the end. */
  private final List<Object> keep = new ArrayList<>();

  private StreamCollectives(Communicator comm, OpenClKernel k, int spin, long seed) {
    this.comm = comm;
    this.k = k;
    this.rank = comm.rank();
    this.size = comm.size();
    this.spin = spin;
    this.random = new Random(seed * 7919 + rank);
    this.sink = clCreateBuffer(k.context(), CL_MEM_READ_WRITE, (long) N * 4, null, null);
  }

  public static void main(String[] args) throws MPIException {
    String[] parts = args[0].split(",");
    int rounds = Integer.parseInt(args[1]);
    int spin = args.length > 2 ? Integer.parseInt(args[2]) : 20000;
    long seed = args.length > 3 ? Long.parseLong(args[3]) : 1;
    boolean ok = true;
    try (Communicator comm = ProgramWorld.open(args);
        MpiBuild build = MpiBuild.builder().backend("opencl").build();
        Kernel kernel = build.mpiBuildKernel(KernelSource.of(SOURCE).withKernels("delay", "verify"), 0)) {
      StreamCollectives run = new StreamCollectives(comm, kernel.as(OpenClKernel.class), spin, seed);
      for (String part : parts) {
        comm.allReduceMax(new int[1]); // a barrier
        ok &= run.part(part, rounds);
      }
      clReleaseMemObject(run.sink);
      comm.allReduceMax(new int[1]);
    }
    ProgramWorld.finish();
    System.exit(ok ? 0 : 1);
  }

  /** Says which collectives the messenger used: persistent ones for how many of its {@code total}. */
  private void path(String part, QueueMessenger m, int total) {
    System.out.printf(Locale.ROOT, "PATH part=%s rank=%d persistent=%d of=%d binding=%s run=%s%n", part, rank,
        m.persistentCollectivesUsed(), total, comm.persistentCollectives(), m.operationsRun());
    System.out.flush();
  }

  private boolean part(String part, int rounds) {
    cl_command_queue queue = k.queue();
    try {
      return switch (part) {
        case "bcast" -> bcast(queue, rounds);
        case "allreduce" -> allreduce(queue, rounds, false);
        case "allreduce-repeat" -> allreduce(queue, rounds, true);
        case "two-queues" -> twoQueues(queue, rounds);
        case "fail-bcast", "fail-allreduce" -> faults.fail(queue, part);
        case "mismatch" -> faults.mismatch(queue);
        case "absent" -> faults.absent(queue);
        case "close" -> faults.close(queue);
        default -> throw new IllegalArgumentException("unknown part " + part);
      };
    } catch (CompletionException e) {
      if (e.getCause() != null && e.getCause().getMessage() != null
          && e.getCause().getMessage().contains("has no typed reductions")) {
        System.out.println("UNSUPPORTED part=" + part + " reason=" + e.getCause().getMessage());
        return true;
      }
      return report(part, false, "failed: " + e.getCause());
    }
  }

  boolean report(String part, boolean ok, String detail) {
    System.out.printf(Locale.ROOT, "CHECK part=%s rank=%d ok=%s detail=%s%n", part, rank, ok, detail);
    System.out.flush();
    return ok;
  }

  /** Makes the queue slow before the next command: a busy kernel, or (one round in three) a held user event. */
  private void slow(cl_command_queue queue) {
    if (random.nextInt(3) == 0) {
      cl_event held = hold(queue);
      timer.schedule(() -> release(held), random.nextInt(40), TimeUnit.MILLISECONDS);
      return;
    }
    cl_kernel delay = k.kernel("delay");
    clSetKernelArg(delay, 0, Sizeof.cl_int, Pointer.to(new int[] {spin / 2 + random.nextInt(spin + 1)}));
    clSetKernelArg(delay, 1, Sizeof.cl_mem, Pointer.to(sink));
    check(clEnqueueNDRangeKernel(queue, delay, 1, null, new long[] {N}, null, 0, null, null));
  }

  /** Holds the queue: the commands enqueued after this wait until {@link #release} of the user event returned. */
  cl_event hold(cl_command_queue queue) {
    cl_event held = clCreateUserEvent(k.context(), null);
    check(clEnqueueMarkerWithWaitList(queue, 1, new cl_event[] {held}, null));
    clFlush(queue);
    return held;
  }

  /** Lets a queue held by {@link #hold} go on. */
  static void release(cl_event held) {
    clSetUserEventStatus(held, CL_COMPLETE);
    clReleaseEvent(held);
  }

  cl_mem buffer(cl_command_queue queue, ByteBuffer values) {
    cl_mem b = clCreateBuffer(k.context(), CL_MEM_READ_WRITE, values.capacity(), null, null);
    keep.add(values);
    check(clEnqueueWriteBuffer(queue, b, CL_FALSE, 0, values.capacity(), Pointer.to(values), 0, null, null));
    return b;
  }

  /** A non-blocking copy of the buffer to the host, enqueued after the collective: the marker. */
  private ByteBuffer copyAfter(cl_command_queue queue, cl_mem b, long bytes, List<cl_event> events) {
    ByteBuffer host = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
    keep.add(host);
    cl_event e = new cl_event();
    check(clEnqueueReadBuffer(queue, b, CL_FALSE, 0, bytes, Pointer.to(host), 0, null, e));
    events.add(e);
    return host;
  }

  /** Rank r's value i in round: (r + 1 + round) * (i + 1), negated on odd ranks so MIN and MAX differ. */
  static double value(int r, int round, int i) {
    return (double) (r + 1 + round) * (i + 1) * (r % 2 == 0 ? 1 : -1);
  }

  double reduced(ReduceOp op, int round, int i) {
    double sum = 0;
    double min = Double.MAX_VALUE;
    double max = -Double.MAX_VALUE;
    for (int r = 0; r < size; r++) {
      double v = value(r, round, i);
      sum += v;
      min = Math.min(min, v);
      max = Math.max(max, v);
    }
    return op == ReduceOp.SUM ? sum : op == ReduceOp.MIN ? min : max;
  }

  /** Polls the marker's event without blocking on the queue: it must not complete before the result. */
  private static void awaitEvent(cl_event e) {
    int[] status = {1};
    while (status[0] > 0) {
      check(clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, Sizeof.cl_int, Pointer.to(status), null));
      Thread.onSpinWait();
    }
    clReleaseEvent(e);
  }

  private boolean bcast(cl_command_queue queue, int rounds) {
    try (QueueMessenger m = QueueMessenger.open(comm, queue)) {
      List<CompletableFuture<Void>> futures = new ArrayList<>();
      List<cl_event> markers = new ArrayList<>();
      List<ByteBuffer> copies = new ArrayList<>();
      List<cl_mem> buffers = new ArrayList<>();
      for (int round = 0; round < rounds; round++) {
        int root = round % size;
        int base = 1000 * (rank + 1) + round;
        cl_mem b = buffer(queue, TypedValues.of(Datatype.INT, N, i -> base + i));
        buffers.add(b);
        slow(queue);
        futures.add(m.bcastAfter(b, (long) N * 4, root));
        copies.add(copyAfter(queue, b, (long) N * 4, markers));
      }
      clFlush(queue);
      int wrong = 0;
      String first = "";
      for (int round = 0; round < rounds; round++) {
        awaitEvent(markers.get(round)); // before the future: the marker alone must see the root's data
        int root = round % size;
        for (int i = 0; i < N; i++) {
          int expected = 1000 * (root + 1) + round + i;
          if (copies.get(round).getInt(i * 4) != expected && wrong++ == 0) {
            first = "round " + round + " [" + i + "] = " + copies.get(round).getInt(i * 4) + ", expected " + expected;
          }
        }
      }
      futures.forEach(CompletableFuture::join);
      clFinish(queue);
      buffers.forEach(CL::clReleaseMemObject);
      path("bcast", m, rounds);
      return report("bcast", wrong == 0, wrong == 0 ? rounds + " rounds" : wrong + " wrong, first " + first);
    }
  }

  private boolean allreduce(cl_command_queue queue, int rounds, boolean repeat) {
    String part = repeat ? "allreduce-repeat" : "allreduce";
    cl_mem errors = clCreateBuffer(k.context(), CL_MEM_READ_WRITE, 4, null, null);
    check(clEnqueueWriteBuffer(queue, errors, CL_TRUE, 0, 4, Pointer.to(new int[1]), 0, null, null));
    try (QueueMessenger m = QueueMessenger.open(comm, queue)) {
      List<CompletableFuture<Void>> futures = new ArrayList<>();
      List<cl_event> markers = new ArrayList<>();
      List<ByteBuffer> copies = new ArrayList<>();
      List<cl_mem> buffers = new ArrayList<>();
      int combos = Datatype.values().length * ReduceOp.values().length;
      int kernelChecks = 0;
      for (int round = 0; round < rounds; round++) {
        Datatype type = repeat ? Datatype.INT : Datatype.values()[(round % combos) / ReduceOp.values().length];
        ReduceOp op = repeat ? ReduceOp.SUM : ReduceOp.values()[round % ReduceOp.values().length];
        int r = round;
        cl_mem b = buffer(queue, TypedValues.of(type, N, i -> value(rank, r, i)));
        buffers.add(b);
        slow(queue);
        futures.add(m.allreduceAfter(b, N, type, op));
        copies.add(copyAfter(queue, b, (long) N * type.bytes(), markers));
        if (type == Datatype.INT && op == ReduceOp.SUM) {
          // a kernel after it reads the reduced values: sum_r (r + 1 + round) * (i + 1) * sign(r)
          int base = (int) reduced(ReduceOp.SUM, round, 0);
          cl_kernel verify = k.kernel("verify");
          clSetKernelArg(verify, 0, Sizeof.cl_mem, Pointer.to(b));
          clSetKernelArg(verify, 1, Sizeof.cl_int, Pointer.to(new int[] {base}));
          clSetKernelArg(verify, 2, Sizeof.cl_mem, Pointer.to(errors));
          check(clEnqueueNDRangeKernel(queue, verify, 1, null, new long[] {N}, null, 0, null, null));
          kernelChecks++;
        }
      }
      clFlush(queue);
      int wrong = 0;
      String first = "";
      for (int round = 0; round < rounds; round++) {
        awaitEvent(markers.get(round));
        Datatype type = repeat ? Datatype.INT : Datatype.values()[(round % combos) / ReduceOp.values().length];
        ReduceOp op = repeat ? ReduceOp.SUM : ReduceOp.values()[round % ReduceOp.values().length];
        for (int i = 0; i < N; i++) {
          double expected = reduced(op, round, i);
          double got = TypedValues.at(copies.get(round), type, i);
          if (Math.abs(got - expected) > 1e-6 * Math.abs(expected) && wrong++ == 0) {
            first = "round " + round + " " + type + " " + op + " [" + i + "] = " + got + ", expected " + expected;
          }
        }
      }
      futures.forEach(CompletableFuture::join);
      int[] kernelWrong = new int[1];
      check(clEnqueueReadBuffer(queue, errors, CL_TRUE, 0, 4, Pointer.to(kernelWrong), 0, null, null));
      buffers.forEach(CL::clReleaseMemObject);
      boolean ok = wrong == 0 && kernelWrong[0] == 0;
      path(part, m, rounds);
      return report(part, ok, "rounds=" + rounds + " marker_wrong=" + wrong + " kernel_checks=" + kernelChecks
          + " kernel_wrong=" + kernelWrong[0] + (wrong > 0 ? " first: " + first : ""));
    } finally {
      clReleaseMemObject(errors);
    }
  }

  private boolean twoQueues(cl_command_queue queue, int rounds) {
    cl_command_queue second = clCreateCommandQueueWithProperties(k.context(), k.device(), new cl_queue_properties(),
        null);
    try (QueueMessenger a = QueueMessenger.open(comm, queue); QueueMessenger b = QueueMessenger.open(comm, second)) {
      List<CompletableFuture<Void>> futures = new ArrayList<>();
      List<cl_event> markers = new ArrayList<>();
      List<ByteBuffer[]> copies = new ArrayList<>();
      List<cl_mem> buffers = new ArrayList<>();
      for (int round = 0; round < rounds; round++) {
        boolean firstSlow = random.nextBoolean();
        int r = round;
        cl_mem x = buffer(queue, TypedValues.of(Datatype.INT, N, i -> value(rank, r, i)));
        cl_mem y = buffer(second, TypedValues.of(Datatype.INT, N, i -> 1000 * (rank + 1) + r + i));
        cl_mem z = buffer(queue, TypedValues.of(Datatype.DOUBLE, N, i -> value(rank, r, i)));
        buffers.addAll(List.of(x, y, z));
        slow(firstSlow ? queue : second);
        futures.add(a.allreduceAfter(x, N, Datatype.INT, ReduceOp.SUM));
        futures.add(b.bcastAfter(y, (long) N * 4, round % size));
        futures.add(a.allreduceAfter(z, N, Datatype.DOUBLE, ReduceOp.MAX));
        ByteBuffer cx = copyAfter(queue, x, (long) N * 4, markers);
        ByteBuffer cz = copyAfter(queue, z, (long) N * 8, markers);
        ByteBuffer cy = copyAfter(second, y, (long) N * 4, markers);
        copies.add(new ByteBuffer[] {cx, cy, cz});
      }
      clFlush(queue);
      clFlush(second);
      markers.forEach(StreamCollectives::awaitEvent);
      futures.forEach(CompletableFuture::join);
      int wrong = 0;
      String first = "";
      for (int round = 0; round < rounds; round++) {
        ByteBuffer[] c = copies.get(round);
        for (int i = 0; i < N; i++) {
          double[] expected = {reduced(ReduceOp.SUM, round, i), 1000 * (round % size + 1) + round + i,
              reduced(ReduceOp.MAX, round, i)};
          double[] got = {c[0].getInt(i * 4), c[1].getInt(i * 4), c[2].getDouble(i * 8)};
          for (int j = 0; j < 3; j++) {
            if (got[j] != expected[j] && wrong++ == 0) {
              first = "round " + round + " collective " + j + " [" + i + "] = " + got[j] + ", expected " + expected[j];
            }
          }
        }
      }
      clFinish(queue);
      clFinish(second);
      buffers.forEach(CL::clReleaseMemObject);
      return report("two-queues", wrong == 0, wrong == 0 ? rounds + " rounds" : wrong + " wrong, first " + first);
    } finally {
      clReleaseCommandQueue(second);
    }
  }
}
