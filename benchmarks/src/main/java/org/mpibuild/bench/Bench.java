package org.mpibuild.bench;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import mpi.MPI;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.opencl.OpenClKernel;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Compilation;
import org.mpibuild.spi.LoadedProgram;

/**
 * One benchmark job at one N (launched by {@link BenchReport}). A cell's time runs from a barrier until the
 * last rank holds a ready kernel: built, loaded, every kernel launched once and finished. Its CPU time is
 * the processes' CPU time over the cell, summed over ranks.
 *
 * <p>The {@code cold} job runs a warm-up repetition (dropped), then {@code REPS} repetitions; each runs
 * every strategy once, in an order that rotates from one repetition to the next:
 * <ul>
 *   <li>{@code naive}: every rank compiles;
 *   <li>{@code lock}: OCCA up to v1.1, a lock directory in the shared cache: the first rank compiles, the
 *       others poll, and take over a lock older than the stale age (OCCA's 20 s, polled every 0.5 s);
 *   <li>{@code lock-long}: the same with a stale age shorter than the compile, as OCCA's 20 s against a
 *       23 s compile: the stale age is 20/23 of the compile time measured at the start of this job, the
 *       poll 2.5% of the stale age;
 *   <li>{@code occa12}: OCCA from v1.2: a rank that finds no binary compiles into a private temporary
 *       file and renames it into place, so that every rank of a cold start compiles;
 *   <li>{@code collective}: mpi-build with an empty cache;
 *   <li>{@code limit}: one region: rank 0 compiles, a raw MPI broadcast of the bytes, every rank loads.
 * </ul>
 * The {@code warm} job (a new job, so that every rank's PoCL kernel cache is empty) runs, per repetition,
 * {@code collective-warm} and {@code occa12-warm} on the directories the cold job's repetition filled.
 * Every cell's source carries a define of its own, so that PoCL's cache never answers for a strategy.
 *
 * <p>usage: Bench OUT.jsonl cold|warm REPS PROGRAM
 */
public final class Bench {
  /** OCCA's stale age and polling (occa/src/utils/io/lock.cpp up to v1.1). */
  static final long OCCA_STALE_MS = 20_000;
  static final long OCCA_POLL_MS = 500;

  private static int rank;
  private static int size;
  private static Backend backend;
  private static String program;

  private Bench() {}

  /** What one cell measured; times in ns, counters summed over ranks unless said. */
  record Cell(long nanos, long cpuNanos, long compiles, long fsops, long bytes, long binaryBytes, long compileNanos) {
    static Cell of(long compiles, long fsops, long bytes, long binaryBytes, long compileNanos) {
      return new Cell(0, 0, compiles, fsops, bytes, binaryBytes, compileNanos);
    }
  }

  /** The stale age and poll of the lock, in ms. */
  record Lock(long staleMillis, long pollMillis) {}

  public static void main(String[] args) throws Exception {
    MPI.Init(args);
    rank = MPI.COMM_WORLD.getRank();
    size = MPI.COMM_WORLD.getSize();
    Path out = Path.of(args[0]);
    boolean warm = args[1].equals("warm");
    int reps = Integer.parseInt(args[2]);
    program = args[3];
    Path work = Path.of(System.getenv("MPI_BUILD_BENCH_DIR"));
    backend = org.mpibuild.programs.Scenarios.openCl();
    StringBuilder json = new StringBuilder();
    if (warm) {
      warm(json, work, reps);
    } else {
      cold(json, work, reps);
    }
    if (rank == 0) {
      Files.writeString(out, json.toString());
    }
    backend.close();
    MPI.Finalize();
  }

  static final List<String> COLD = List.of("naive", "lock", "lock-long", "occa12", "collective", "limit");
  static final List<String> WARM = List.of("collective-warm", "occa12-warm");

  static void cold(StringBuilder json, Path work, int reps) throws Exception {
    long compileMs = calibrate();
    long stale = compileMs * 20 / 23;
    Lock occa = new Lock(OCCA_STALE_MS, OCCA_POLL_MS);
    Lock scaled = new Lock(stale, Math.max(1, stale / 40));
    if (rank == 0) {
      System.out.printf(Locale.ROOT, "bench n=%d: fastest compile of %s measured at %d ms; lock-long stale age %d ms, poll %d ms"
          + " (20/23 of the compile, and 2.5%% of that)%n", size, program, compileMs, scaled.staleMillis(), scaled.pollMillis());
    }
    List<Double> longCompiles = new ArrayList<>();
    for (int rep = -1; rep < reps; rep++) {
      for (String s : rotated(COLD, rep)) {
        String tag = s + " " + rep + " " + size;
        KernelSource request = variant(program, tag);
        Cell c = switch (s) {
          case "naive" -> naive(request);
          case "lock" -> lock(request, work.resolve("lock-" + rep), occa);
          case "lock-long" -> lock(request, work.resolve("lock-long-" + rep), scaled);
          case "occa12" -> occa12(request, work.resolve("occa12-" + rep));
          case "collective" -> collective(request, work.resolve("collective-" + rep));
          case "limit" -> limit(request);
          default -> throw new IllegalStateException(s);
        };
        if (s.equals("lock-long") && rep >= 0) {
          longCompiles.add(c.compileNanos() / 1e6);
        }
        record(json, s, rep, c, s.equals("lock-long") ? scaled : s.equals("lock") ? occa : null);
      }
    }
    // The long case measures something only if the compile outlasts the stale age.
    double compile = Stats.median(longCompiles);
    boolean holds = compile > scaled.staleMillis();
    if (rank == 0) {
      System.out.printf(Locale.ROOT, "bench n=%d: check compile_ms > stale_ms for lock-long: %.0f > %d %s (median over"
          + " %d repetitions: %s)%n", size, compile, scaled.staleMillis(), holds ? "holds" : "DOES NOT HOLD",
          longCompiles.size(), longCompiles);
    }
    if (!holds) {
      throw new IllegalStateException("lock-long measured nothing: its compile took " + compile + " ms (median), not "
          + "more than the stale age of " + scaled.staleMillis() + " ms");
    }
  }

  /** The warm cells, on the directories of the cold job's repetitions, with the cold cells' requests. */
  static void warm(StringBuilder json, Path work, int reps) throws Exception {
    for (int rep = -1; rep < reps; rep++) {
      for (String s : rotated(WARM, rep)) {
        Cell c = s.equals("collective-warm")
            ? collective(variant(program, "collective " + rep + " " + size), work.resolve("collective-" + rep))
            : occa12(variant(program, "occa12 " + rep + " " + size), work.resolve("occa12-" + rep));
        record(json, s, rep, c, null);
      }
    }
  }

  /** The strategies in the order of repetition {@code rep}: rotated by one place each repetition. */
  static List<String> rotated(List<String> strategies, int rep) {
    List<String> order = new ArrayList<>(strategies);
    Collections.rotate(order, -Math.floorMod(rep, strategies.size()));
    return order;
  }

  /**
   * Rank 0 compiles the program seven times (sources of their own) and returns, on every rank, the fastest of
   * the last six in ms: the first pays the compiler's start-up, and the fastest keeps the stale age below the
   * compiles of the long case, which the run checks.
   */
  static long calibrate() throws Exception {
    long[] fastest = {Long.MAX_VALUE};
    if (rank == 0) {
      for (int i = 0; i < 7; i++) {
        long t0 = System.nanoTime();
        Compilation c = backend.compile(variant(program, "calibrate " + i + " " + size));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        c.program().close();
        if (i > 0) {
          fastest[0] = Math.min(fastest[0], ms);
        }
      }
    }
    MPI.COMM_WORLD.bcast(fastest, 1, MPI.LONG, 0);
    return fastest[0];
  }

  /**
   * The program with a define of its own, so that PoCL's kernel cache (which hashes the build options)
   * never answers for a cell.
   */
  static KernelSource variant(String program, String tag) {
    KernelSource p = Programs.byName(program);
    String run = System.getenv().getOrDefault("MPI_BUILD_BENCH_RUN", "0");
    String define = "-DMPI_BUILD_BENCH_CELL=0x" + Integer.toHexString((run + " " + tag).hashCode());
    return KernelSource.of(p.source()).withKernels(kernelNames(p))
        .withOptions((p.options() + " " + define).trim());
  }

  interface Body {
    Cell run() throws Exception;
  }

  /** Times {@code body} from a barrier to the slowest rank's end; sums CPU time and counters over ranks. */
  static Cell timed(Body body) throws Exception {
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    MPI.COMM_WORLD.barrier();
    long cpu0 = os.getProcessCpuTime();
    long t0 = System.nanoTime();
    Cell c = body.run();
    long mine = System.nanoTime() - t0;
    long cpu = os.getProcessCpuTime() - cpu0;
    long[] in = {mine, cpu, c.compiles(), c.fsops(), c.bytes(), c.binaryBytes(), c.compileNanos()};
    long[] max = new long[in.length];
    long[] sum = new long[in.length];
    MPI.COMM_WORLD.allReduce(in, max, in.length, MPI.LONG, MPI.MAX);
    MPI.COMM_WORLD.allReduce(in, sum, in.length, MPI.LONG, MPI.SUM);
    return new Cell(max[0], sum[1], sum[2], sum[3], sum[4], max[5], max[6]);
  }

  static Cell naive(KernelSource request) throws Exception {
    return timed(() -> {
      long t0 = System.nanoTime();
      Compilation c = backend.compile(request);
      long compile = System.nanoTime() - t0;
      ready(c.program());
      return Cell.of(1, 0, 0, c.binary().length, compile);
    });
  }

  /** Launches every kernel once, waits for them, and closes the program. */
  static void ready(LoadedProgram p) {
    try (p) {
      Launch.everyKernel(p, program);
    }
  }

  /**
   * OCCA up to v1.1: the first rank to create the lock directory compiles; the others poll until the lock
   * is gone, then read the binary; a lock older than the stale age is taken over. Every file system call
   * on the shared directory is counted.
   */
  static Cell lock(KernelSource request, Path dir, Lock lock) throws Exception {
    return timed(() -> {
      long[] ops = {0};
      Path binary = dir.resolve("binary");
      Path lockDir = dir.resolve("lock");
      int compiles = 0;
      long compileNanos = 0;
      LoadedProgram program = null;
      long bytes = 0;
      ops[0]++;
      Files.createDirectories(dir);
      while (program == null) {
        ops[0]++;
        if (Files.exists(binary)) {
          ops[0]++;
          byte[] b = Files.readAllBytes(binary);
          bytes += b.length;
          program = backend.load(b, request.kernelNames());
          break;
        }
        boolean mine;
        try {
          ops[0]++;
          Files.createDirectory(lockDir);
          mine = true;
        } catch (FileAlreadyExistsException e) {
          mine = false;
        }
        if (mine) {
          long t0 = System.nanoTime();
          Compilation c = backend.compile(request);
          compileNanos = System.nanoTime() - t0;
          compiles++;
          Path tmp = dir.resolve("binary." + rank + ".tmp");
          ops[0] += 3;
          Files.write(tmp, c.binary());
          Files.move(tmp, binary, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
          Files.deleteIfExists(lockDir);
          bytes += c.binary().length;
          program = c.program();
          break;
        }
        while (true) {
          Thread.sleep(lock.pollMillis());
          long age;
          try {
            ops[0]++;
            age = System.currentTimeMillis() - Files.getLastModifiedTime(lockDir).toMillis();
          } catch (NoSuchFileException e) {
            break; // released
          }
          if (age > lock.staleMillis()) {
            ops[0]++;
            Files.deleteIfExists(lockDir); // stale: take it over
            break;
          }
        }
      }
      ready(program);
      return Cell.of(compiles, ops[0], bytes, Files.size(binary), compileNanos);
    });
  }

  /**
   * OCCA from v1.2: a rank that finds the binary loads it; one that does not compiles into a temporary file
   * of its own and renames it over the binary (atomic, last writer wins). Cold, every rank compiles.
   */
  static Cell occa12(KernelSource request, Path dir) throws Exception {
    return timed(() -> {
      long ops = 0;
      Path binary = dir.resolve("binary");
      LoadedProgram program;
      int compiles = 0;
      long bytes = 0;
      long compileNanos = 0;
      ops++;
      Files.createDirectories(dir);
      ops++;
      if (Files.exists(binary)) {
        ops++;
        byte[] b = Files.readAllBytes(binary);
        bytes += b.length;
        program = backend.load(b, request.kernelNames());
      } else {
        long t0 = System.nanoTime();
        Compilation c = backend.compile(request);
        compileNanos = System.nanoTime() - t0;
        compiles++;
        Path tmp = Files.createTempFile(dir, "binary.", ".tmp");
        ops += 3;
        Files.write(tmp, c.binary());
        Files.move(tmp, binary, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        bytes += c.binary().length;
        program = c.program();
      }
      ready(program);
      return Cell.of(compiles, ops, bytes, Files.size(binary), compileNanos);
    });
  }

  /** mpi-build: the root compiles (or finds the binary in the cache) and broadcasts it. */
  static Cell collective(KernelSource request, Path cacheDir) throws Exception {
    try (MpiBuild mb = MpiBuild.builder().backend(org.mpibuild.programs.Scenarios.openCl()).cacheDirectory(cacheDir)
        .compileTimeout(Duration.ofMinutes(30)).build()) {
      long compiles0 = mb.statistics().compiles();
      long ops0 = mb.statistics().cacheFileOperations();
      long[] bytes = {0};
      Cell c = timed(() -> {
        try (Kernel k = mb.mpiBuildKernel(request, 0)) {
          Launch.everyKernel(k.as(OpenClKernel.class), program);
          bytes[0] = k.stats().binaryBytes();
          return Cell.of(0, 0, 0, k.stats().binaryBytes(), k.stats().obtainNanos());
        }
      });
      var after = mb.statistics();
      long sent = rank == 0 ? bytes[0] * (size - 1) : 0;
      long[] total = new long[1];
      MPI.COMM_WORLD.allReduce(new long[] {sent}, total, 1, MPI.LONG, MPI.SUM);
      return new Cell(c.nanos(), c.cpuNanos(), after.compiles() - compiles0, after.cacheFileOperations() - ops0,
          total[0], c.binaryBytes(), c.compileNanos());
    }
  }

  /** The limit, timed as one region: one compile on rank 0, a raw broadcast of the bytes, a load everywhere. */
  static Cell limit(KernelSource request) throws Exception {
    return timed(() -> {
      byte[] binary = null;
      long compileNanos = 0;
      LoadedProgram program = null;
      if (rank == 0) {
        long t0 = System.nanoTime();
        Compilation c = backend.compile(request);
        compileNanos = System.nanoTime() - t0;
        binary = c.binary();
        program = c.program();
      }
      int[] len = {rank == 0 ? binary.length : 0};
      MPI.COMM_WORLD.bcast(len, 1, MPI.INT, 0);
      ByteBuffer buf = ByteBuffer.allocateDirect(len[0]);
      if (rank == 0) {
        buf.put(binary).flip();
      }
      MPI.COMM_WORLD.bcast(buf, len[0], MPI.BYTE, 0);
      if (rank != 0) {
        byte[] mine = new byte[len[0]];
        buf.get(mine);
        program = backend.load(mine, request.kernelNames());
      }
      ready(program);
      return Cell.of(rank == 0 ? 1 : 0, 0, rank == 0 ? (long) len[0] * (size - 1) : 0, len[0], compileNanos);
    });
  }

  static List<String> kernelNames(KernelSource request) {
    if (!request.kernelNames().isEmpty()) {
      return request.kernelNames();
    }
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("__kernel void (\\w+)").matcher(request.source());
    List<String> out = new ArrayList<>();
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  static void record(StringBuilder json, String strategy, int rep, Cell c, Lock lock) {
    if (rank == 0) {
      System.out.printf(Locale.ROOT, "bench n=%d %s %s rep %d: %.0f ms, %.1f cpu-s, %d compiles, %d fs ops%s%n", size,
          program, strategy, rep, c.nanos() / 1e6, c.cpuNanos() / 1e9, c.compiles(), c.fsops(),
          rep < 0 ? " (warm-up, dropped)" : "");
    }
    if (rep < 0) {
      return;
    }
    json.append(BenchJson.line("n", size, "program", program, "strategy", strategy, "rep", rep,
        "ms", BenchJson.round(c.nanos() / 1e6, 3), "cpu_s", BenchJson.round(c.cpuNanos() / 1e9, 3),
        "compiles", c.compiles(), "fsops", c.fsops(), "bytes", c.bytes(), "binary_bytes", c.binaryBytes(),
        "compile_ms", BenchJson.round(c.compileNanos() / 1e6, 3),
        "stale_ms", lock == null ? 0 : lock.staleMillis(), "poll_ms", lock == null ? 0 : lock.pollMillis()));
  }
}
