package org.mpibuild.programs;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import jcuda.driver.CUresult;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.MpiBuildBuilder;
import org.mpibuild.cuda.CudaKernel;
import org.mpibuild.cuda.StreamMessenger;
import org.mpibuild.spi.Communicator;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * {@link StreamMessenger} on a GPU, for the GPU check: N ranks in one JVM (the test kit's in-process
 * communicator), or the N processes of an MPI job (the GPU bundle's own MPI), one CUDA stream each (two for
 * {@code two-streams}). Every rank enqueues each part whole, with a random delay on its stream (a kernel that spins
 * on the GPU's clock) before each operation, and waits only at the end.
 *
 * <pre>CudaStreams RANKS [ROUNDS [SEED [own|shared]]]
 * mpiexec -n RANKS ... CudaStreams mpi [ROUNDS [SEED]]</pre>
 *
 * {@code mpi}: each process of an MPI job is one rank, on the job's world communicator (the FFM binding where
 * {@code MPI_BUILD_BINDING=ffm}, else mpi.jar), with the device's primary context of its own process, as a
 * program's ranks run; {@code contexts=process} in the first line.
 * {@code own} (the default): each rank has a CUDA context of its own, as each process of an MPI job has, with the
 * kernels' binary loaded into it. {@code shared}: every rank on the device's primary context, which no MPI job
 * does: there one rank's implicitly synchronizing call (a pinned or device allocation) or the scheduler's
 * serialization of streams can make another rank's work wait behind a stream that waits for a message
 * ({@code docs/cuda.md}, "Why ranks that share a context can freeze"). Own contexts also run the ranks' kernels
 * time-sliced, never at once, as an MPI job's processes on one GPU without MPS. Either way every rank sets up its
 * context, streams, buffers and messengers before any rank enqueues its first operation (the messengers' pools
 * still allocate pinned blocks as the parts are queued), and reads results into pinned memory.
 *
 * Parts, one line each per rank, {@code CUDASTREAMS part=P ranks=N rank=R ok=B detail=...}:
 * <ul>
 *   <li>{@code ring}: {@code receiveBefore}, a kernel that adds rank + 1 to a token, {@code sendAfter} to the next
 *       rank; rank 0 checks the token at the end.
 *   <li>{@code allreduce}: {@code allreduceAfter} of every type and op in turn, each on a buffer of its own. A CUDA
 *       event recorded right after it must not complete before the reduced values are on the device (MPICH issue
 *       #7612's defect): the host waits for the event, then reads the buffer on a stream of its own. A kernel
 *       enqueued after it copies the buffer aside: it must have seen the reduced values.
 *   <li>{@code bcast}: {@code bcastAfter} from a root that changes every round, checked the same two ways.
 *   <li>{@code two-streams}: two messengers on two streams of each rank, one communicator: an all-reduce on the
 *       first, a broadcast on the second, an all-reduce on the first, the slow stream changing every round; they
 *       must not reorder.
 *   <li>{@code control}: the marker's check, shown able to fail: a buffer read after an event recorded before a
 *       slow fill and its all-reduce must not hold the result (and the all-reduce must still give it).
 * </ul>
 * Then {@code CUDASTREAMS result ok=B} and exit status 0, or 1 if any check failed; 2 if a rank did not finish
 * within the deadline.
 */
public final class CudaStreams {
  static final String SOURCE = String.join("\n",
      "extern \"C\" __global__ void delay(long long cycles) {",
      "  long long start = clock64();",
      "  while (clock64() - start < cycles) { }",
      "}",
      "__device__ long long value(int rank, int round, int i) { return (long long) (rank + 1) * (i % 7 + 1) + round; }",
      "extern \"C\" __global__ void fill_int(int* b, int n, int rank, int round) {",
      "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = (int) value(rank, round, i); }",
      "extern \"C\" __global__ void fill_long(long long* b, int n, int rank, int round) {",
      "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = value(rank, round, i); }",
      "extern \"C\" __global__ void fill_float(float* b, int n, int rank, int round) {",
      "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = (float) value(rank, round, i); }",
      "extern \"C\" __global__ void fill_double(double* b, int n, int rank, int round) {",
      "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = (double) value(rank, round, i); }",
      "extern \"C\" __global__ void add(int* b, int n, int v) {",
      "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] += v; }",
      "extern \"C\" __global__ void copy(const unsigned char* from, unsigned char* to, long long n) {",
      "  long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; if (i < n) to[i] = from[i]; }",
      "");
  static final String[] KERNELS = {"delay", "fill_int", "fill_long", "fill_float", "fill_double", "add", "copy"};
  /** Elements per buffer: enough for several blocks. */
  static final int COUNT = 1 << 16;
  /** How long the whole check may take before it prints every thread's stack and exits with status 2. */
  static final int DEADLINE_SECONDS = 45;
  /** The longest random delay before an operation, in GPU clock cycles (about 20 ms at 2 GHz). */
  static final long MAX_DELAY_CYCLES = 40_000_000L;
  static final int BLOCK = 256;


  public static void main(String[] args) throws Exception {
    boolean job = args.length > 0 && args[0].equals("mpi");
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 12;
    long seed = args.length > 2 ? Long.parseLong(args[2]) : 1;
    String contexts = job ? "process" : args.length > 3 ? args[3] : "own";
    if (!job && !List.of("own", "shared").contains(contexts)) {
      throw new IllegalArgumentException("the contexts are own or shared, not '" + contexts + "'");
    }
    Communicator world = job ? ProgramWorld.open(new String[0]) : null;
    MpiBuildBuilder builder = MpiBuild.builder().backend("cuda");
    if (job) {
      builder.communicator(world);
    }
    boolean ok;
    try (MpiBuild build = builder.build();
        Kernel kernel = build.mpiBuildKernel(KernelSource.of(SOURCE).withKernels(KERNELS), 0)) {
      CudaKernel k = kernel.as(CudaKernel.class);
      int ranks = job ? world.size() : Integer.parseInt(args[0]);
      System.out.println("CUDASTREAMS target=" + kernel.target() + " ranks=" + ranks + " rounds=" + rounds
          + " contexts=" + contexts);
      ok = job ? awaitRanks(List.of(rankThreads(1).submit(() -> new CudaStreamsRank(new RankDevice.Shared(k), world,
          rounds, seed, CudaStreamsRank.Gate.of(world), CudaStreamsRank.Gate.of(world)).run())))
          : threadsAsRanks(k, contexts.equals("own") ? kernel.binaryData().binary() : null, ranks, rounds, seed);
    }
    System.out.println("CUDASTREAMS result ok=" + ok);
    if (job) {
      ProgramWorld.finish();
    }
    System.exit(ok ? 0 : 1);
  }

  /**
   * RANKS ranks as threads of this process on the test kit's in-process communicator, each on a context of its
   * own with {@code image} loaded into it, or, where {@code image} is null, all on the device's primary context.
   */
  private static boolean threadsAsRanks(CudaKernel k, byte[] image, int ranks, int rounds, long seed)
      throws InterruptedException {
    InProcessCommunicator.World world = new InProcessCommunicator.World(ranks, 60_000);
    ExecutorService pool = rankThreads(ranks);
    CyclicBarrier ready = new CyclicBarrier(ranks);
    CyclicBarrier allDone = new CyclicBarrier(ranks);
    List<Future<Boolean>> results = new ArrayList<>();
    for (int r = 0; r < ranks; r++) {
      Communicator comm = world.rank(r);
      results.add(pool.submit(() -> {
        try {
          RankDevice device = image != null ? new RankDevice.Own(k, image) : new RankDevice.Shared(k);
          return new CudaStreamsRank(device, comm, rounds, seed, CudaStreamsRank.Gate.of(ready),
              CudaStreamsRank.Gate.of(allDone)).run();
        } catch (Exception | Error e) {
          ready.reset(); // the others stop waiting for this rank, and each says why
          allDone.reset();
          throw e;
        }
      }));
    }
    boolean ok = awaitRanks(results);
    pool.shutdown();
    return ok;
  }

  /** Daemon threads for the ranks: a rank stuck in the driver must not keep the JVM from exiting with ok=false. */
  private static ExecutorService rankThreads(int ranks) {
    AtomicInteger started = new AtomicInteger();
    return Executors.newFixedThreadPool(ranks, r -> {
      Thread t = new Thread(r, "rank-thread-" + started.getAndIncrement());
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * Whether every rank passed, each waited for until {@link #DEADLINE_SECONDS} after the first wait began; a rank
   * still running then ends the process with status 2, after every thread's stack.
   */
  private static boolean awaitRanks(List<Future<Boolean>> results) throws InterruptedException {
    boolean ok = true;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
    for (int r = 0; r < results.size(); r++) {
      try {
        ok &= results.get(r).get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (java.util.concurrent.ExecutionException e) {
        System.out.println("CUDASTREAMS rank=" + r + " failed: " + e.getCause());
        ok = false;
      } catch (java.util.concurrent.TimeoutException e) {
        System.out.println("CUDASTREAMS result ok=false rank " + r + " did not finish within " + DEADLINE_SECONDS
            + " s; threads:");
        Thread.getAllStackTraces().forEach((t, stack) -> {
          System.out.println("  thread " + t.getName() + " " + t.getState());
          for (StackTraceElement f : java.util.Arrays.copyOf(stack, Math.min(stack.length, 12))) {
            System.out.println("    at " + f);
          }
        });
        System.out.flush();
        Runtime.getRuntime().halt(2);
      }
    }
    return ok;
  }

  static void check(int rc, String what) {
    if (rc != CUresult.CUDA_SUCCESS) {
      throw new IllegalStateException(what + " failed: " + CUresult.stringFor(rc));
    }
  }
}
