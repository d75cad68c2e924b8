package org.mpibuild.programs;

import static jcuda.driver.JCudaDriver.cuCtxCreate;
import static jcuda.driver.JCudaDriver.cuCtxGetDevice;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGetAttribute;
import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemAllocHost;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadDataJIT;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import jcuda.Pointer;
import jcuda.driver.CUcomputemode;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUfunction;
import jcuda.driver.CUjit_option;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JITOptions;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.cuda.CudaKernel;
import org.mpibuild.cuda.StreamMessenger;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * {@link StreamMessenger} on a GPU, for the GPU check: N ranks in one JVM (the test kit's in-process
 * communicator: the GPU machine has no MPI), one CUDA stream each (two for {@code two-streams}). Every rank
 * enqueues each part whole, with a random delay on its stream (a kernel that spins on the GPU's clock) before each
 * operation, and waits only at the end.
 *
 * <pre>CudaStreams RANKS [ROUNDS [SEED [own|shared]]]</pre>
 *
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

  private CudaStreams() {}

  public static void main(String[] args) throws Exception {
    int ranks = Integer.parseInt(args[0]);
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 12;
    long seed = args.length > 2 ? Long.parseLong(args[2]) : 1;
    String contexts = args.length > 3 ? args[3] : "own";
    if (!List.of("own", "shared").contains(contexts)) {
      throw new IllegalArgumentException("the contexts are own or shared, not '" + contexts + "'");
    }
    boolean ok;
    try (MpiBuild build = MpiBuild.builder().backend("cuda").build();
        Kernel kernel = build.mpiBuildKernel(KernelSource.of(SOURCE).withKernels(KERNELS), 0)) {
      CudaKernel k = kernel.as(CudaKernel.class);
      System.out.println("CUDASTREAMS target=" + kernel.target() + " ranks=" + ranks + " rounds=" + rounds
          + " contexts=" + contexts);
      byte[] image = contexts.equals("own") ? kernel.binaryData().binary() : null;
      InProcessCommunicator.World world = new InProcessCommunicator.World(ranks, 60_000);
      java.util.concurrent.atomic.AtomicInteger started = new java.util.concurrent.atomic.AtomicInteger();
      ExecutorService pool = Executors.newFixedThreadPool(ranks, r -> {
        Thread t = new Thread(r, "rank-thread-" + started.getAndIncrement());
        t.setDaemon(true); // a rank stuck in the driver must not keep the JVM from exiting with ok=false
        return t;
      });
      CyclicBarrier ready = new CyclicBarrier(ranks);
      CyclicBarrier allDone = new CyclicBarrier(ranks);
      List<Future<Boolean>> results = new ArrayList<>();
      for (int r = 0; r < ranks; r++) {
        Communicator comm = world.rank(r);
        results.add(pool.submit(() -> {
          try {
            return new Rank(image != null ? new Own(k, image) : new Shared(k), comm, rounds, seed, ready, allDone)
                .run();
          } catch (Exception | Error e) {
            ready.reset(); // the others stop waiting for this rank, and each says why
            allDone.reset();
            throw e;
          }
        }));
      }
      ok = true;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
      for (int r = 0; r < ranks; r++) {
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
      pool.shutdown();
    }
    System.out.println("CUDASTREAMS result ok=" + ok);
    System.exit(ok ? 0 : 1);
  }

  /** Where a rank's work runs: its context, and the kernels loaded into it. */
  private interface Device {
    CUcontext context();

    /** As {@link CudaKernel#launch}. */
    void launch(String name, int[] grid, int[] block, int sharedMemBytes, CUstream stream, Object... args);
  }

  /** The device's primary context, every rank's: the kernels that MpiBuild loaded. */
  private record Shared(CudaKernel kernel) implements Device {
    @Override
    public CUcontext context() {
      return kernel.context();
    }

    @Override
    public void launch(String name, int[] grid, int[] block, int sharedMemBytes, CUstream stream, Object... args) {
      kernel.launch(name, grid, block, sharedMemBytes, stream, args);
    }
  }

  /**
   * A context of the rank's own on the kernel's GPU, created on the rank's thread, with the kernels' binary loaded
   * and every kernel looked up at once, before the first message (a kernel loaded at its first launch may wait for
   * the whole context). Never destroyed: a messenger's thread may still free pinned memory in it after its close,
   * and the process ends right after the check.
   */
  private static final class Own implements Device {
    private final CUcontext context = new CUcontext();
    private final Map<String, CUfunction> functions = new HashMap<>();

    /** Made current on the calling thread. */
    Own(CudaKernel kernel, byte[] image) {
      check(cuCtxSetCurrent(kernel.context()), "cuCtxSetCurrent");
      CUdevice device = new CUdevice();
      check(cuCtxGetDevice(device), "cuCtxGetDevice");
      int[] mode = new int[1];
      check(cuDeviceGetAttribute(mode, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, device),
          "cuDeviceGetAttribute(COMPUTE_MODE)");
      if (mode[0] != CUcomputemode.CU_COMPUTEMODE_DEFAULT) {
        throw new IllegalStateException("the GPU's compute mode is " + CUcomputemode.stringFor(mode[0])
            + ", which allows no second context in this process: run CudaStreams with 'shared'");
      }
      check(cuCtxCreate(context, 0, device), "cuCtxCreate");
      CUmodule module = new CUmodule();
      byte[] terminated = java.util.Arrays.copyOf(image, image.length + 1); // a PTX image must end with a NUL
      JITOptions jit = new JITOptions();
      byte[] errors = new byte[16384];
      jit.putBytes(CUjit_option.CU_JIT_ERROR_LOG_BUFFER, errors);
      jit.putInt(CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, errors.length);
      int rc = cuModuleLoadDataJIT(module, Pointer.to(terminated), jit);
      if (rc != CUresult.CUDA_SUCCESS) {
        String log = jit.getString(CUjit_option.CU_JIT_ERROR_LOG_BUFFER);
        throw new IllegalStateException("cuModuleLoadDataJIT failed: " + CUresult.stringFor(rc)
            + (log == null || log.isBlank() ? "" : ": " + log.strip()));
      }
      for (String name : KERNELS) {
        CUfunction f = new CUfunction();
        check(cuModuleGetFunction(f, module, name), "cuModuleGetFunction(" + name + ")");
        functions.put(name, f);
      }
    }

    @Override
    public CUcontext context() {
      return context;
    }

    @Override
    public void launch(String name, int[] grid, int[] block, int sharedMemBytes, CUstream stream, Object... args) {
      check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
      CudaKernel.launchFunction(functions.get(name), name, grid, block, sharedMemBytes, stream, args);
    }
  }

  /** One rank: its streams, messengers and parts. */
  private static final class Rank {
    private final Device k;
    private final Communicator comm;
    private final int rounds;
    private final Random random;
    private final int rank;
    private final int size;
    private final CyclicBarrier ready;
    private final CyclicBarrier allDone;
    /** Pinned memory that results are read into, on the reader stream: a copy to pageable memory may block. */
    private Pointer readBack;
    /**
     * Device buffers, all allocated before the first message and freed after the last rank's: a free waits
     * for the whole device, where another rank's stream may wait for a message this rank has yet to send.
     */
    private final List<CUdeviceptr> buffers = new ArrayList<>();
    private int used;

    Rank(Device k, Communicator comm, int rounds, long seed, CyclicBarrier ready, CyclicBarrier allDone) {
      this.k = k;
      this.comm = comm;
      this.rounds = rounds;
      this.rank = comm.rank();
      this.size = comm.size();
      this.random = new Random(seed * 31 + rank);
      this.ready = ready;
      this.allDone = allDone;
    }

    boolean run() throws Exception {
      check(cuCtxSetCurrent(k.context()), "cuCtxSetCurrent");
      CUstream first = stream();
      CUstream second = stream();
      CUstream reader = stream();
      for (int i = 0; i < 2 + 10 * rounds; i++) {
        CUdeviceptr p = new CUdeviceptr();
        check(cuMemAlloc(p, COUNT * 8L), "cuMemAlloc");
        buffers.add(p);
      }
      readBack = new Pointer();
      check(cuMemAllocHost(readBack, COUNT * 8L), "cuMemAllocHost");
      boolean ok = true;
      try (StreamMessenger m1 = StreamMessenger.open(comm, k.context(), first, Duration.ofSeconds(30));
          StreamMessenger m2 = StreamMessenger.open(comm, k.context(), second, Duration.ofSeconds(30))) {
        // contexts, modules, buffers and streams (whose creation may wait for a whole context) are all made before
        // any rank enqueues; the messengers' pools still allocate pinned blocks as the parts are queued
        ready.await(DEADLINE_SECONDS, TimeUnit.SECONDS);
        ok &= part("ring", () -> ring(m1, first));
        ok &= part("allreduce", () -> allreduce(m1, first, reader));
        ok &= part("bcast", () -> bcast(m1, first, reader));
        ok &= part("two-streams", () -> twoStreams(m1, first, m2, second, reader));
        ok &= part("control", () -> control(m1, first, reader));
        // no rank frees or closes while another still has messages coming
        allDone.await(DEADLINE_SECONDS, TimeUnit.SECONDS);
      } finally {
        check(cuCtxSetCurrent(k.context()), "cuCtxSetCurrent");
        cuStreamDestroy(first);
        cuStreamDestroy(second);
        cuStreamDestroy(reader);
        for (CUdeviceptr p : buffers) {
          cuMemFree(p);
        }
        cuMemFreeHost(readBack);
      }
      return ok;
    }

    private boolean part(String name, java.util.concurrent.Callable<String> body) {
      String detail;
      boolean ok;
      try {
        detail = body.call();
        ok = detail.startsWith("ok");
      } catch (Exception | Error e) {
        detail = e.getClass().getSimpleName() + ": " + e.getMessage();
        ok = false;
      }
      System.out.printf(Locale.ROOT, "CUDASTREAMS part=%s ranks=%d rank=%d ok=%s detail=%s%n", name, size, rank, ok,
          detail.replace('\n', ' '));
      System.out.flush();
      return ok;
    }

    /** A token passed around the ring, each rank adding rank + 1; rank 0 checks it. */
    private String ring(StreamMessenger m, CUstream s) {
      CUdeviceptr token = alloc();
      {
        zero(token, COUNT * 4L, s);
        List<CompletableFuture<Void>> futures = new ArrayList<>();
        int next = (rank + 1) % size;
        int prev = (rank + size - 1) % size;
        for (int round = 0; round < rounds; round++) {
          if (rank != 0 || round > 0) {
            futures.add(m.receiveBefore(token, COUNT * 4L, prev, 7));
          }
          delay(s);
          k.launch("add", grid(COUNT), block(), 0, s, token, COUNT, rank + 1);
          futures.add(m.sendAfter(token, COUNT * 4L, next, 7));
        }
        if (rank == 0) {
          futures.add(m.receiveBefore(token, COUNT * 4L, prev, 7));
        }
        check(cuStreamSynchronize(s), "cuStreamSynchronize");
        join(futures);
        if (rank != 0) {
          return "ok";
        }
        ByteBuffer out = read(token, COUNT * 4L, s);
        long expected = (long) rounds * size * (size + 1) / 2;
        int wrong = 0;
        for (int i = 0; i < COUNT; i++) {
          wrong += out.getInt(i * 4) == expected ? 0 : 1;
        }
        return (wrong == 0 ? "ok" : "wrong") + " expected=" + expected + " got=" + out.getInt(0) + " wrong_elements="
            + wrong + " messages=" + futures.size();
      }
    }

    /** One operation's buffer, the event recorded after it, and the copy a kernel after it made. */
    private record Checked(String what, CUdeviceptr buffer, CUevent marker, CUdeviceptr copy, long bytes,
        Datatype type, double[] expected) {}

    private String allreduce(StreamMessenger m, CUstream s, CUstream reader) {
      List<Checked> checks = new ArrayList<>();
      List<CompletableFuture<Void>> futures = new ArrayList<>();
      int n = 0;
      for (int round = 0; round < rounds; round++) {
        Datatype type = Datatype.values()[round % 4];
        ReduceOp op = ReduceOp.values()[(round / 4) % 3];
        long bytes = (long) COUNT * type.bytes();
        CUdeviceptr buffer = alloc();
        delay(s);
        fill(type, buffer, rank, round, s);
        futures.add(m.allreduceAfter(buffer, COUNT, type, op));
        checks.add(after("allreduce " + type + " " + op + " round " + round, buffer, bytes, type,
            expectedAllReduce(op, round), s));
        n++;
      }
      return verify(checks, futures, s, reader, n);
    }

    private String bcast(StreamMessenger m, CUstream s, CUstream reader) {
      List<Checked> checks = new ArrayList<>();
      List<CompletableFuture<Void>> futures = new ArrayList<>();
      for (int round = 0; round < rounds; round++) {
        int root = round % size;
        long bytes = COUNT * 4L;
        CUdeviceptr buffer = alloc();
        delay(s);
        fill(Datatype.INT, buffer, rank == root ? root : -1000 - rank, round, s);
        futures.add(m.bcastAfter(buffer, bytes, root));
        checks.add(after("bcast from " + root + " round " + round, buffer, bytes, Datatype.INT,
            expectedOf(root, round), s));
      }
      return verify(checks, futures, s, reader, rounds);
    }

    /**
     * The marker's check, shown able to fail: an event recorded before a slow fill and its all-reduce completes
     * before them, and the buffer read once it has must not hold the reduced values.
     */
    private String control(StreamMessenger m, CUstream s, CUstream reader) {
      long bytes = COUNT * 4L;
      CUdeviceptr buffer = alloc();
      CUevent early = new CUevent();
      try {
        zero(buffer, bytes, s);
        check(cuEventCreate(early, CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate");
        check(cuEventRecord(early, s), "cuEventRecord");
        k.launch("delay", new int[] {1, 1, 1}, new int[] {1, 1, 1}, 0, s, MAX_DELAY_CYCLES);
        fill(Datatype.INT, buffer, rank, 0, s);
        CompletableFuture<Void> f = m.allreduceAfter(buffer, COUNT, Datatype.INT, ReduceOp.SUM);
        check(cuEventSynchronize(early), "cuEventSynchronize");
        String bad = compare(read(buffer, bytes, reader), Datatype.INT, expectedAllReduce(ReduceOp.SUM, 0));
        check(cuStreamSynchronize(s), "cuStreamSynchronize");
        join(List.of(f));
        String after = compare(read(buffer, bytes, reader), Datatype.INT, expectedAllReduce(ReduceOp.SUM, 0));
        if (bad == null) {
          return "wrong: the buffer read after an event recorded before the all-reduce already held its result";
        }
        return after == null ? "ok the early read " + bad : "wrong: the all-reduce itself " + after;
      } finally {
        cuEventDestroy(early);
      }
    }

    /** All-reduce on the first stream, broadcast on the second, all-reduce on the first; one stream slow. */
    private String twoStreams(StreamMessenger m1, CUstream s1, StreamMessenger m2, CUstream s2, CUstream reader) {
      List<Checked> checks1 = new ArrayList<>();
      List<Checked> checks2 = new ArrayList<>();
      List<CompletableFuture<Void>> futures = new ArrayList<>();
      for (int round = 0; round < rounds; round++) {
        CUstream slow = (round + rank) % 2 == 0 ? s1 : s2;
        long bytes = COUNT * 4L;
        CUdeviceptr a = alloc();
        CUdeviceptr b = alloc();
        CUdeviceptr c = alloc();
        delay(slow);
        fill(Datatype.INT, a, rank, round, s1);
        futures.add(m1.allreduceAfter(a, COUNT, Datatype.INT, ReduceOp.SUM));
        checks1.add(after("first all-reduce round " + round, a, bytes, Datatype.INT,
            expectedAllReduce(ReduceOp.SUM, round), s1));
        fill(Datatype.INT, b, rank == 0 ? 0 : -1000 - rank, round + 1, s2);
        futures.add(m2.bcastAfter(b, bytes, 0));
        checks2.add(after("broadcast round " + round, b, bytes, Datatype.INT, expectedOf(0, round + 1), s2));
        fill(Datatype.INT, c, rank, round + 2, s1);
        futures.add(m1.allreduceAfter(c, COUNT, Datatype.INT, ReduceOp.MAX));
        checks1.add(after("second all-reduce round " + round, c, bytes, Datatype.INT,
            expectedAllReduce(ReduceOp.MAX, round + 2), s1));
      }
      String second = verify(checks2, List.of(), s2, reader, checks2.size());
      String first = verify(checks1, futures, s1, reader, checks1.size());
      return first.startsWith("ok") && second.startsWith("ok") ? "ok " + first + "; " + second
          : "wrong " + first + "; " + second;
    }

    /**
     * Records the marker after an operation and enqueues the copy of its buffer that a kernel makes: what the
     * work after it saw.
     */
    private Checked after(String what, CUdeviceptr buffer, long bytes, Datatype type, double[] expected,
        CUstream s) {
      CUevent marker = new CUevent();
      check(cuEventCreate(marker, CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate");
      check(cuEventRecord(marker, s), "cuEventRecord");
      CUdeviceptr copy = alloc();
      k.launch("copy", new int[] {(int) ((bytes + BLOCK - 1) / BLOCK), 1, 1}, block(), 0, s, buffer, copy, bytes);
      return new Checked(what, buffer, marker, copy, bytes, type, expected);
    }

    /**
     * For each operation in turn: waits for its marker, then reads its buffer on the reader stream (the marker's
     * check); then, once the stream is done, the kernel's copy; then the futures.
     */
    private String verify(List<Checked> checks, List<CompletableFuture<Void>> futures, CUstream s, CUstream reader,
        int n) {
      List<String> wrong = new ArrayList<>();
      try {
        for (Checked c : checks) {
          check(cuEventSynchronize(c.marker), "cuEventSynchronize");
          String bad = compare(read(c.buffer, c.bytes, reader), c.type, c.expected);
          if (bad != null) {
            wrong.add(c.what + ": the buffer, once the event after it completed, " + bad);
          }
        }
        check(cuStreamSynchronize(s), "cuStreamSynchronize");
        for (Checked c : checks) {
          String bad = compare(read(c.copy, c.bytes, reader), c.type, c.expected);
          if (bad != null) {
            wrong.add(c.what + ": the kernel after it " + bad);
          }
        }
        join(futures);
      } finally {
        for (Checked c : checks) {
          cuEventDestroy(c.marker);
        }
      }
      return wrong.isEmpty() ? "ok operations=" + n : "wrong " + wrong.size() + " of " + 2 * n + " checks: "
          + String.join("; ", wrong.subList(0, Math.min(3, wrong.size())));
    }

    /** Null if {@code data} holds {@code expected}; else what it held instead. */
    private static String compare(ByteBuffer data, Datatype type, double[] expected) {
      for (int i = 0; i < COUNT; i++) {
        double got = switch (type) {
          case INT -> data.getInt(i * 4);
          case LONG -> data.getLong(i * 8);
          case FLOAT -> data.getFloat(i * 4);
          case DOUBLE -> data.getDouble(i * 8);
        };
        if (got != expected[i % expected.length]) {
          return "held " + got + " at element " + i + ", not " + expected[i % expected.length];
        }
      }
      return null;
    }

    /** The value rank r fills element i with in a round: (r + 1) * (i % 7 + 1) + round, for i % 7 = 0..6. */
    private static double[] expectedOf(int r, int round) {
      double[] e = new double[7];
      for (int j = 0; j < 7; j++) {
        e[j] = (double) (r + 1) * (j + 1) + round;
      }
      return e;
    }

    private double[] expectedAllReduce(ReduceOp op, int round) {
      double[] e = new double[7];
      for (int j = 0; j < 7; j++) {
        e[j] = switch (op) {
          case SUM -> (double) size * (size + 1) / 2 * (j + 1) + (double) size * round;
          case MIN -> (j + 1) + round;
          case MAX -> (double) size * (j + 1) + round;
        };
      }
      return e;
    }

    private void fill(Datatype type, CUdeviceptr buffer, int r, int round, CUstream s) {
      k.launch("fill_" + type.name().toLowerCase(Locale.ROOT), grid(COUNT), block(), 0, s, buffer, COUNT, r, round);
    }

    /** A random delay on the stream, up to {@link #MAX_DELAY_CYCLES}: this rank's stream is late by it. */
    private void delay(CUstream s) {
      k.launch("delay", new int[] {1, 1, 1}, new int[] {1, 1, 1}, 0, s, (long) (random.nextDouble() * MAX_DELAY_CYCLES));
    }

    private void zero(CUdeviceptr buffer, long bytes, CUstream s) {
      check(jcuda.driver.JCudaDriver.cuMemsetD8Async(buffer, (byte) 0, bytes, s), "cuMemsetD8Async");
    }

    /** The buffer's first {@code bytes}, read on stream {@code s}; valid until the next read. */
    private ByteBuffer read(CUdeviceptr buffer, long bytes, CUstream s) {
      check(cuMemcpyDtoHAsync(readBack, buffer, bytes, s), "cuMemcpyDtoHAsync");
      check(cuStreamSynchronize(s), "cuStreamSynchronize");
      return readBack.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder());
    }

    /** The next of the buffers allocated up front ({@link #buffers}), of {@code COUNT} longs. */
    private CUdeviceptr alloc() {
      return buffers.get(used++);
    }

    private static CUstream stream() {
      CUstream s = new CUstream();
      check(cuStreamCreate(s, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate");
      return s;
    }

    private static int[] grid(int n) {
      return new int[] {(n + BLOCK - 1) / BLOCK, 1, 1};
    }

    private static int[] block() {
      return new int[] {BLOCK, 1, 1};
    }

    private static void join(List<CompletableFuture<Void>> futures) {
      for (CompletableFuture<Void> f : futures) {
        f.orTimeout(DEADLINE_SECONDS, TimeUnit.SECONDS).join();
      }
    }
  }

  private static void check(int rc, String what) {
    if (rc != CUresult.CUDA_SUCCESS) {
      throw new IllegalStateException(what + " failed: " + CUresult.stringFor(rc));
    }
  }
}
