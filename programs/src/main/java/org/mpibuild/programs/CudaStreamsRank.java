package org.mpibuild.programs;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemAllocHost;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;
import static org.mpibuild.programs.CudaStreams.BLOCK;
import static org.mpibuild.programs.CudaStreams.COUNT;
import static org.mpibuild.programs.CudaStreams.DEADLINE_SECONDS;
import static org.mpibuild.programs.CudaStreams.MAX_DELAY_CYCLES;
import static org.mpibuild.programs.CudaStreams.check;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import org.mpibuild.cuda.StreamMessenger;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/** One rank of {@link CudaStreams}: its streams, messengers and parts. */
final class CudaStreamsRank {
  /** Where every rank of the check waits for every other: a barrier of threads, or of the job's processes. */
  @FunctionalInterface
  interface Gate {
    void await() throws Exception;

    /** The ranks are threads of this process. */
    static Gate of(CyclicBarrier barrier) {
      return () -> barrier.await(DEADLINE_SECONDS, TimeUnit.SECONDS);
    }

    /** The ranks are the communicator's processes: an all-reduce of one value, which no rank leaves early. */
    static Gate of(Communicator comm) {
      return () -> comm.allReduceMax(new int[] {0});
    }
  }

  private final RankDevice k;
  private final Communicator comm;
  private final int rounds;
  private final Random random;
  private final int rank;
  private final int size;
  private final Gate ready;
  private final Gate allDone;
  /** Pinned memory that results are read into, on the reader stream: a copy to pageable memory may block. */
  private Pointer readBack;
  /**
   * Device buffers, all allocated before the first message and freed after the last rank's: a free waits
   * for the whole device, where another rank's stream may wait for a message this rank has yet to send.
   */
  private final List<CUdeviceptr> buffers = new ArrayList<>();
  private int used;

  CudaStreamsRank(RankDevice k, Communicator comm, int rounds, long seed, Gate ready, Gate allDone) {
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
      ready.await();
      ok &= part("ring", () -> ring(m1, first));
      ok &= part("allreduce", () -> allreduce(m1, first, reader));
      ok &= part("bcast", () -> bcast(m1, first, reader));
      ok &= part("two-streams", () -> twoStreams(m1, first, m2, second, reader));
      ok &= part("control", () -> control(m1, first, reader));
      // no rank frees or closes while another still has messages coming
      allDone.await();
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
      double got = TypedValues.at(data, type, i);
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

  /** A random delay on the stream, up to {@link CudaStreams#MAX_DELAY_CYCLES}: this rank's stream is late by it. */
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
