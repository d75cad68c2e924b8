package org.mpibuild.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import mpi.MPI;
import org.mpibuild.JobStatistics;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Compilation;
import org.mpibuild.spi.LoadedProgram;

/**
 * One benchmark job at one N (launched by {@link BenchReport}): the same programs built the same number
 * of times under every strategy, in one run. A cell's time runs from a barrier to the moment the last rank
 * holds a ready kernel (every kernel launchable with no more compiling), reduced with MPI_MAX.
 *
 * <p>Strategies: {@code naive} (every rank compiles), {@code lock} (OCCA's shared directory with a
 * directory lock, polled every 0.5 s, stale after the given age), {@code collective-cold} and
 * {@code collective-warm} (mpi-build with an empty, then a warm cache), and the parts of {@code limit}
 * (one compile, then one load per rank; the report adds a plain C MPI_Bcast of the same bytes).
 * Every cell's source carries its own comment, so PoCL's own kernel cache never answers for a strategy.
 *
 * <p>usage: Bench OUT.jsonl REPS STALE_MS PROGRAM[,PROGRAM...] [LONG_PROGRAM LONG_STALE_MS LONG_REPS]
 */
public final class Bench {
  private static int rank;
  private static int size;
  private static Backend backend;

  private Bench() {}

  record Cell(long nanos, long compiles, long fsops, long bytes, long binaryBytes, long compileNanos, long loadNanos) {}

  public static void main(String[] args) throws Exception {
    MPI.Init(args);
    rank = MPI.COMM_WORLD.getRank();
    size = MPI.COMM_WORLD.getSize();
    Path out = Path.of(args[0]);
    int reps = Integer.parseInt(args[1]);
    long stale = Long.parseLong(args[2]);
    Path work = Path.of(System.getenv("MPI_BUILD_BENCH_DIR"));
    backend = openCl();
    StringBuilder json = new StringBuilder();
    for (String program : args[3].split(",")) {
      for (int rep = 0; rep < reps; rep++) {
        String tag = program + "-" + rep + "-" + size;
        record(json, program, "naive", rep, naive(variant(program, "naive " + tag)));
        record(json, program, "lock", rep, lock(variant(program, "lock " + tag), work.resolve("lock-" + tag), stale));
        Cell[] both = collective(variant(program, "collective " + tag), work.resolve("collective-" + tag));
        record(json, program, "collective-cold", rep, both[0]);
        record(json, program, "collective-warm", rep, both[1]);
        record(json, program, "limit", rep, limit(variant(program, "limit " + tag)));
      }
    }
    if (args.length > 5) {
      String program = args[4];
      long longStale = Long.parseLong(args[5]);
      int longReps = args.length > 6 ? Integer.parseInt(args[6]) : reps;
      for (int rep = 0; rep < longReps; rep++) {
        String tag = program + "-long-" + rep + "-" + size;
        record(json, program, "lock-long", rep, lock(variant(program, "lock-long " + tag), work.resolve("ll-" + tag),
            longStale));
        Cell[] both = collective(variant(program, "collective-long " + tag), work.resolve("cl-" + tag));
        record(json, program, "collective-long", rep, both[0]);
      }
    }
    if (rank == 0) {
      Files.writeString(out, json.toString());
    }
    backend.close();
    MPI.Finalize();
  }

  /**
   * The program with a define of its own, so that PoCL's kernel cache (which hashes the build options)
   * never answers for a cell.
   */
  static KernelSource variant(String program, String tag) {
    KernelSource p = Programs.byName(program);
    String run = System.getenv().getOrDefault("MPI_BUILD_BENCH_RUN", "0");
    String define = "-DMPI_BUILD_BENCH_CELL=0x" + Integer.toHexString((run + " " + tag).hashCode());
    return KernelSource.of(p.source()).withKernels(p.kernelNames())
        .withOptions((p.options() + " " + define).trim());
  }

  interface Body {
    Cell run() throws Exception;
  }

  /** Times {@code body} from a barrier to the slowest rank's end, and sums its counters over ranks. */
  static Cell timed(Body body) throws Exception {
    MPI.COMM_WORLD.barrier();
    long t0 = System.nanoTime();
    Cell c = body.run();
    long mine = System.nanoTime() - t0;
    long[] in = {mine, c.compiles, c.fsops, c.bytes, c.binaryBytes, c.compileNanos, c.loadNanos};
    long[] max = new long[in.length];
    long[] sum = new long[in.length];
    MPI.COMM_WORLD.allReduce(in, max, in.length, MPI.LONG, MPI.MAX);
    MPI.COMM_WORLD.allReduce(in, sum, in.length, MPI.LONG, MPI.SUM);
    return new Cell(max[0], sum[1], sum[2], sum[3], max[4], max[5], max[6]);
  }

  static Cell naive(KernelSource request) throws Exception {
    return timed(() -> {
      Compilation c = backend.compile(request);
      c.program().close();
      return new Cell(0, 1, 0, 0, c.binary().length, 0, 0);
    });
  }

  /**
   * OCCA's way: the first rank takes a directory lock and compiles; the others poll every 0.5 s until the
   * lock is gone, then read the binary; a lock older than the stale age is taken over. Every file system
   * call on the shared directory is counted.
   */
  static Cell lock(KernelSource request, Path dir, long staleMillis) throws Exception {
    return timed(() -> {
      long[] ops = {0};
      long[] bytes = {0};
      Path binary = dir.resolve("binary");
      Path lock = dir.resolve("lock");
      int compiles = 0;
      LoadedProgram program = null;
      ops[0]++;
      Files.createDirectories(dir);
      while (program == null) {
        ops[0]++;
        if (Files.exists(binary)) {
          program = readAndLoad(binary, request, ops, bytes);
          break;
        }
        boolean mine;
        try {
          ops[0]++;
          Files.createDirectory(lock);
          mine = true;
        } catch (FileAlreadyExistsException e) {
          mine = false;
        }
        if (mine) {
          Compilation c = backend.compile(request);
          compiles++;
          Path tmp = dir.resolve("binary." + rank + ".tmp");
          ops[0]++;
          Files.write(tmp, c.binary());
          ops[0]++;
          Files.move(tmp, binary, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
          bytes[0] += c.binary().length;
          ops[0]++;
          Files.deleteIfExists(lock);
          program = c.program();
          break;
        }
        while (true) {
          Thread.sleep(500);
          long age;
          try {
            ops[0]++;
            age = System.currentTimeMillis() - Files.getLastModifiedTime(lock).toMillis();
          } catch (NoSuchFileException e) {
            break; // released
          }
          if (age > staleMillis) {
            ops[0]++;
            Files.deleteIfExists(lock); // stale: take it over
            break;
          }
        }
      }
      program.close();
      return new Cell(0, compiles, ops[0], bytes[0], Files.size(binary), 0, 0);
    });
  }

  static LoadedProgram readAndLoad(Path binary, KernelSource request, long[] ops, long[] bytes) throws IOException {
    ops[0]++;
    byte[] b = Files.readAllBytes(binary);
    bytes[0] += b.length;
    List<String> names = request.kernelNames();
    return backend.load(b, names.isEmpty() ? kernelNames(request) : names);
  }

  static List<String> kernelNames(KernelSource request) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("__kernel void (\\w+)").matcher(request.source());
    List<String> out = new java.util.ArrayList<>();
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  /** mpi-build with an empty cache, then the same request again with the cache warm. */
  static Cell[] collective(KernelSource request, Path cacheDir) throws Exception {
    try (MpiBuild mb = MpiBuild.builder().backend(openCl()).cacheDirectory(cacheDir)
        .compileTimeout(Duration.ofMinutes(30)).build()) {
      Cell cold = timed(() -> {
        try (Kernel k = mb.mpiBuildKernel(request, 0)) {
          return new Cell(0, 0, 0, 0, k.stats().binaryBytes(), 0, 0);
        }
      });
      JobStatistics afterCold = mb.statistics();
      Cell warm = timed(() -> {
        try (Kernel k = mb.mpiBuildKernel(request, 0)) {
          return new Cell(0, 0, 0, 0, k.stats().binaryBytes(), 0, 0);
        }
      });
      JobStatistics afterWarm = mb.statistics();
      return new Cell[] {
        new Cell(cold.nanos(), afterCold.compiles(), afterCold.cacheFileOperations(),
            afterCold.bytesBroadcast() * Math.max(0, size - 1) + cold.binaryBytes(), cold.binaryBytes(), 0, 0),
        new Cell(warm.nanos(), afterWarm.compiles() - afterCold.compiles(),
            afterWarm.cacheFileOperations() - afterCold.cacheFileOperations(),
            (afterWarm.bytesBroadcast() - afterCold.bytesBroadcast()) * Math.max(0, size - 1) + warm.binaryBytes(),
            warm.binaryBytes(), 0, 0)
      };
    }
  }

  /** The parts of the limit: one compile on rank 0, and one load on every rank, timed apart. */
  static Cell limit(KernelSource request) throws Exception {
    byte[][] binary = new byte[1][];
    long[] compile = {0};
    timed(() -> {
      if (rank == 0) {
        long t0 = System.nanoTime();
        Compilation c = backend.compile(request);
        compile[0] = System.nanoTime() - t0;
        c.program().close();
        binary[0] = c.binary();
      }
      return new Cell(0, rank == 0 ? 1 : 0, 0, 0, 0, 0, 0);
    });
    int[] len = {rank == 0 ? binary[0].length : 0};
    MPI.COMM_WORLD.bcast(len, 1, MPI.INT, 0);
    ByteBuffer buf = ByteBuffer.allocateDirect(len[0]);
    if (rank == 0) {
      buf.put(binary[0]).flip();
    }
    MPI.COMM_WORLD.bcast(buf, len[0], MPI.BYTE, 0);
    byte[] mine = new byte[len[0]];
    buf.get(mine);
    Cell load = timed(() -> {
      long t0 = System.nanoTime();
      LoadedProgram p = backend.load(mine, request.kernelNames().isEmpty() ? kernelNames(request) : request.kernelNames());
      long t = System.nanoTime() - t0;
      p.close();
      return new Cell(0, 0, 0, 0, 0, 0, t);
    });
    long[] c = {compile[0]};
    MPI.COMM_WORLD.bcast(c, 1, MPI.LONG, 0);
    return new Cell(0, 1, 0, (long) len[0] * Math.max(0, size - 1), len[0], c[0], load.loadNanos());
  }

  static void record(StringBuilder json, String program, String strategy, int rep, Cell c) {
    json.append(BenchJson.line("n", size, "program", program, "strategy", strategy, "rep", rep,
        "ms", BenchJson.round(c.nanos() / 1e6, 3), "compiles", c.compiles(), "fsops", c.fsops(), "bytes", c.bytes(),
        "binary_bytes", c.binaryBytes(), "compile_ms", BenchJson.round(c.compileNanos() / 1e6, 3),
        "load_ms", BenchJson.round(c.loadNanos() / 1e6, 3)));
    if (rank == 0) {
      System.out.printf(Locale.ROOT, "bench n=%d %s %s rep %d: %.0f ms, %d compiles, %d fs ops%n", size, program,
          strategy, rep, c.nanos() / 1e6, c.compiles(), c.fsops());
    }
  }

  static Backend openCl() {
    return org.mpibuild.programs.Scenarios.openCl();
  }

}
