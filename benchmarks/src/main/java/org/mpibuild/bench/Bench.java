package org.mpibuild.bench;

import java.nio.LongBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import mpi.MPI;
import org.mpibuild.KernelSource;
import org.mpibuild.spi.Backend;

/**
 * One benchmark job at one N (launched by {@link BenchReport}). A cell's time runs from a barrier until the
 * last rank holds a ready kernel: its device context open, the program built or loaded, every kernel
 * launched once at the shape {@link Programs#shapes} gives and finished. Everything a strategy does for
 * that, its own set-up included (mpi-build's {@code MpiBuild.builder()...build()}, a device context of its
 * own for every strategy), is inside the timed region, and every rank times its phases there
 * ({@link Phases}); the cell keeps the slowest rank's phases. Its CPU time is the processes' CPU time over
 * the cell, its ended child processes' included (a shaped compile runs in one), summed over ranks.
 *
 * <p>The {@code cold} job ({@code naive}, {@code collective}, {@code limit-finished}) and the {@code occa} job
 * ({@code lock}, {@code lock-long}, {@code occa12}: OCCA's schemes in processes of their own, {@link #OCCA}) each run
 * a warm-up repetition (dropped), then {@code REPS} repetitions, a multiple of the number of strategies; each runs
 * every strategy once, in an order that rotates from one repetition to the next, so that every strategy runs in
 * every position equally often; a ratio across the two jobs pairs repetition i with repetition i:
 * <ul>
 *   <li>{@code naive}: every rank compiles from source with its own context ({@code clCreateProgramWithSource}
 *       + {@code clBuildProgram}) and launches; it never reads the program binary;
 *   <li>{@code lock}: OCCA up to v1.1, a lock directory in the shared cache: the first rank compiles and
 *       writes the binary, the others poll, and take over a lock older than the stale age (OCCA's 20 s,
 *       polled every 0.5 s);
 *   <li>{@code lock-long}: the same with a stale age shorter than the compile, as OCCA's 20 s against a
 *       23 s compile: the stale age is 20/23 of the compile time measured at the start of this job, the
 *       poll 2.5% of the stale age;
 *   <li>{@code occa12}: OCCA from v1.2: a rank that finds no binary compiles into a private temporary
 *       file and renames it into place, so that every rank of a cold start compiles;
 *   <li>{@code collective}: mpi-build with an empty cache, its request naming the launch shapes;
 *   <li>{@code limit-finished}: the physical finished-code limit: rank 0's front end and first launches of
 *       the named shapes in its own process, a raw MPI broadcast of the finished binary, a load and the first
 *       launches on every other rank; the making of that binary is not timed
 *       ({@link Strategies#limitFinished}).
 * </ul>
 * The {@code warm} job (a new job, so that every rank's PoCL kernel cache is empty) runs, per repetition,
 * {@code collective-warm} and {@code occa12-warm} on the directories the cold jobs' repetition filled:
 * warm and cold cells are in different jobs, so their ratio is unpaired. The {@code shapes} job runs
 * {@code collective} and {@code collective-unshaped} (the same request without its shapes): what an unnamed
 * shape costs a receiver. Every cell's source carries a define of its own, so that PoCL's cache never
 * answers for a strategy.
 *
 * <p>usage: Bench OUT.jsonl cold|occa|warm|shapes REPS PROGRAM
 */
public final class Bench {
  private static int rank;
  private static int size;
  private static Backend backend;
  private static String program;

  private Bench() {}

  /** What one cell measured; times in ns, counters summed over ranks unless said. */
  record Cell(long nanos, long cpuNanos, long compiles, long fsops, long bytes, long binaryBytes, long compileNanos,
      Phases.Slowest phases) {}

  /** One rank's account of a cell while it runs: phases, counters and what to close after the timing. */
  static final class Run {
    final long[] phases = new long[Phases.COUNT];
    long compiles;
    long fsops;
    long bytes;
    long binaryBytes;
    long compileNanos;
    boolean receiver;
    /** Wall and CPU time inside the body that the cell does not count (the physical limit's binary). */
    long excludedNanos;
    long excludedCpuNanos;
    final List<AutoCloseable> closers = new ArrayList<>();
    long mark = System.nanoTime();

    /** Adds the time since the last lap to {@code phase}; returns it. */
    long lap(int phase) {
      long now = System.nanoTime();
      long d = now - mark;
      phases[phase] += d;
      mark = now;
      return d;
    }
  }

  static final List<String> COLD = List.of("naive", "collective", "limit-finished");
  /**
   * OCCA's strategies, cold, in processes of their own: on PoCL before 6.0 the value of POCL_BINARY_SPECIALIZE_WG
   * that mpi-build's first compile in a process sets is kept for the life of the process, and OCCA's binary query
   * there would then build mpi-build's named functions too.
   */
  static final List<String> OCCA = List.of("lock", "lock-long", "occa12");
  static final List<String> WARM = List.of("collective-warm", "occa12-warm");
  static final List<String> SHAPES = List.of("collective", "collective-unshaped");

  public static void main(String[] args) throws Exception {
    MPI.Init(args);
    rank = MPI.COMM_WORLD.getRank();
    size = MPI.COMM_WORLD.getSize();
    Path out = Path.of(args[0]);
    String job = args[1];
    int reps = Integer.parseInt(args[2]);
    program = args[3];
    List<String> strategies = strategies(job);
    if (reps % strategies.size() != 0) {
      throw new IllegalArgumentException("reps=" + reps + " is not a multiple of the " + strategies.size()
          + " strategies of the " + job + " job " + strategies + ": every rotation must occur equally often");
    }
    Path work = Path.of(System.getenv("MPI_BUILD_BENCH_DIR"));
    backend = org.mpibuild.programs.Scenarios.openCl(); // loads JOCL's natives; calibrates
    // Each cell's line is in the file as soon as it is measured: a job that dies later leaves its cells usable.
    try (Cells json = new Cells(rank == 0 ? out : null)) {
      switch (job) {
        case "warm" -> warm(json, work, reps);
        case "shapes" -> shapes(json, work, reps);
        default -> cold(json, work, reps, strategies);
      }
    }
    backend.close();
    MPI.Finalize();
  }

  /** The strategies of the job {@code job}. */
  static List<String> strategies(String job) {
    return switch (job) {
      case "cold" -> COLD;
      case "occa" -> OCCA;
      case "warm" -> WARM;
      case "shapes" -> SHAPES;
      default -> throw new IllegalArgumentException("job '" + job + "': expected cold, occa, warm or shapes");
    };
  }

  /** The cold cells of {@code strategies} ({@link #COLD} or {@link #OCCA}). */
  static void cold(Cells json, Path work, int reps, List<String> strategies) throws Exception {
    boolean lockLong = strategies.contains("lock-long");
    long compileMs = lockLong ? calibrate() : 0;
    long stale = compileMs * 20 / 23;
    OccaCaches.Lock occa = new OccaCaches.Lock(OccaCaches.OCCA_STALE_MS, OccaCaches.OCCA_POLL_MS);
    OccaCaches.Lock scaled = new OccaCaches.Lock(stale, Math.max(1, stale / 40));
    if (rank == 0 && lockLong) {
      System.out.printf(Locale.ROOT, "bench n=%d: fastest compile of %s measured at %d ms; lock-long stale age %d ms, poll %d ms"
          + " (20/23 of the compile, and 2.5%% of that)%n", size, program, compileMs, scaled.staleMillis(), scaled.pollMillis());
    }
    List<Double> longCompiles = new ArrayList<>();
    Cells longJson = new Cells(null); // lock-long's lines, kept apart until its check below
    for (int rep = -1; rep < reps; rep++) {
      for (String s : rotated(strategies, rep)) {
        String tag = s + " " + rep + " " + size;
        Cell c = switch (s) {
          case "naive" -> Strategies.naive(variant(program, tag, false), program);
          case "lock" -> OccaCaches.lock(variant(program, tag, false), work.resolve("lock-" + rep), occa, rank, program);
          case "lock-long" -> OccaCaches.lock(variant(program, tag, false), work.resolve("lock-long-" + rep), scaled, rank,
              program);
          case "occa12" -> OccaCaches.occa12(variant(program, tag, false), work.resolve("occa12-" + rep), program);
          case "collective" -> Strategies.collective(variant(program, tag, true), work.resolve("collective-" + rep),
              size, program);
          case "limit-finished" -> Strategies.limitFinished(variant(program, tag, true), rank, size, program);
          default -> throw new IllegalStateException(s);
        };
        if (s.equals("lock-long") && rep >= 0) {
          longCompiles.add(c.compileNanos() / 1e6);
        }
        record(s.equals("lock-long") ? longJson : json, s, rep, c,
            s.equals("lock-long") ? scaled : s.equals("lock") ? occa : null);
      }
    }
    if (!lockLong) {
      return;
    }
    // The long case measures something only if the compile outlasts the stale age.
    double compile = Stats.median(longCompiles);
    boolean holds = compile > scaled.staleMillis();
    if (rank == 0) {
      System.out.printf(Locale.ROOT, "bench n=%d: check compile_ms > stale_ms for lock-long: %.0f > %d %s (median over"
          + " %d repetitions: %s)%s%n", size, compile, scaled.staleMillis(), holds ? "holds" : "DOES NOT HOLD",
          longCompiles.size(), longCompiles, holds ? "" : "; lock-long measured nothing: its cells are kept as "
          + LOCK_LONG_VOID + " and left out of the comparison");
    }
    // A lock-long that measured nothing is not a result, but it must not cost the job's other cells: its
    // lines are kept under another strategy id, which the tables and the bench: line leave out, and the report
    // says so for this N.
    json.append(holds ? longJson.held() : BenchJson.withStrategy(longJson.held(), "lock-long", LOCK_LONG_VOID));
  }

  /**
   * Where a job's cell lines go: appended to the output file and flushed as each is measured (rank 0; the other
   * ranks write nothing), or held in memory ({@code file} null) until the caller knows what they are.
   */
  static final class Cells implements AutoCloseable {
    private final java.io.Writer out;
    private final StringBuilder held = new StringBuilder();

    Cells(Path file) throws java.io.IOException {
      out = file == null ? null : Files.newBufferedWriter(file, java.nio.charset.StandardCharsets.UTF_8);
    }

    void append(String lines) {
      if (out == null) {
        held.append(lines);
        return;
      }
      try {
        out.write(lines);
        out.flush();
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException("cannot write the benchmark's cells: " + e.getMessage(), e);
      }
    }

    String held() {
      return held.toString();
    }

    @Override
    public void close() throws java.io.IOException {
      if (out != null) {
        out.close();
      }
    }
  }

  /** What the cold job marks lock-long's cells with when its compile did not outlast the stale age. */
  static final String LOCK_LONG_VOID = "lock-long-void";


  /** The warm cells, on the directories of the cold job's repetitions, with the cold cells' requests. */
  static void warm(Cells json, Path work, int reps) throws Exception {
    for (int rep = -1; rep < reps; rep++) {
      Path collective = work.resolve("collective-" + rep);
      Path occa12 = work.resolve("occa12-" + rep);
      for (Path cold : List.of(collective, occa12)) {
        if (!java.nio.file.Files.isDirectory(cold)) { // its cells would be cold ones, called warm
          throw new IllegalStateException("warm repetition " + rep + ": no cache " + cold + " from the cold jobs");
        }
      }
      for (String s : rotated(WARM, rep)) {
        Cell c = s.equals("collective-warm")
            ? Strategies.collective(variant(program, "collective " + rep + " " + size, true), collective, size, program)
            : OccaCaches.occa12(variant(program, "occa12 " + rep + " " + size, false), occa12, program);
        record(json, s, rep, c, null);
      }
    }
  }

  /** mpi-build with and without the request's launch shapes, side by side: what an unnamed shape costs. */
  static void shapes(Cells json, Path work, int reps) throws Exception {
    for (int rep = -1; rep < reps; rep++) {
      for (String s : rotated(SHAPES, rep)) {
        Cell c = Strategies.collective(variant(program, "shapes " + s + " " + rep + " " + size,
            s.equals("collective")), work.resolve("shapes-" + s + "-" + rep), size, program);
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
   * Rank 0 compiles the program seven times (sources of their own: build, then the binary, as the lock
   * strategies do) and returns, on every rank, the fastest of the last six in ms: the first pays the
   * compiler's start-up, and the fastest keeps the stale age below the compiles of the long case, which the
   * run checks.
   */
  static long calibrate() throws Exception {
    long[] fastest = {Long.MAX_VALUE};
    if (rank == 0) {
      try (Ocl cl = Ocl.open()) {
        for (int i = 0; i < 7; i++) {
          KernelSource r = variant(program, "calibrate " + i + " " + size, false);
          long t0 = System.nanoTime();
          Ocl.binary(cl.build(r.source(), r.options()));
          long ms = (System.nanoTime() - t0) / 1_000_000;
          if (i > 0) {
            fastest[0] = Math.min(fastest[0], ms);
          }
        }
      }
    }
    // The other ranks wait without spinning: a busy rank would slow the compiles measured here, and with
    // them the stale age, which the long case's compiles must then outlast.
    LongBuffer result = MPI.newLongBuffer(1);
    result.put(0, fastest[0]);
    awaitPolitely(MPI.COMM_WORLD.iBcast(result, 1, MPI.LONG, 0));
    return result.get(0);
  }

  /**
   * The program with a define of its own, so that PoCL's kernel cache (which hashes the build options)
   * never answers for a cell; with {@code shaped}, the request names the launch shapes {@link Launch} uses.
   */
  static KernelSource variant(String program, String tag, boolean shaped) {
    KernelSource p = Programs.byName(program);
    String run = System.getenv().getOrDefault("MPI_BUILD_BENCH_RUN", "0");
    String define = "-DMPI_BUILD_BENCH_CELL=0x" + Integer.toHexString((run + " " + tag).hashCode());
    KernelSource r = KernelSource.of(p.source()).withKernels(kernelNames(p))
        .withOptions((p.options() + " " + define).trim());
    return shaped ? r.withLaunchShapes(Programs.shapes(program, Launch.N)) : r;
  }

  interface Body {
    void run(Run r) throws Exception;
  }

  /**
   * Times {@code body} from a barrier to the slowest rank's end; then closes what it opened (untimed), sums
   * CPU time and counters over ranks, and gathers every rank's phases.
   */
  static Cell timed(Body body) throws Exception {
    Run r = new Run();
    MPI.COMM_WORLD.barrier();
    long cpu0 = Cpu.nanos();
    long t0 = System.nanoTime();
    r.mark = t0;
    body.run(r);
    long mine = System.nanoTime() - t0 - r.excludedNanos;
    long cpu = Cpu.nanos() - cpu0 - r.excludedCpuNanos;
    for (int i = r.closers.size() - 1; i >= 0; i--) {
      r.closers.get(i).close();
    }
    long[] in = {mine, cpu, r.compiles, r.fsops, r.bytes, r.binaryBytes, r.compileNanos};
    long[] max = new long[in.length];
    long[] sum = new long[in.length];
    MPI.COMM_WORLD.allReduce(in, max, in.length, MPI.LONG, MPI.MAX);
    MPI.COMM_WORLD.allReduce(in, sum, in.length, MPI.LONG, MPI.SUM);
    long[] mineAll = new long[Phases.WIDTH];
    mineAll[0] = mine;
    System.arraycopy(r.phases, 0, mineAll, 1, Phases.COUNT);
    mineAll[Phases.COUNT + 1] = r.receiver ? 1 : 0;
    long[] all = new long[Phases.WIDTH * size];
    MPI.COMM_WORLD.allGather(mineAll, Phases.WIDTH, MPI.LONG, all, Phases.WIDTH, MPI.LONG);
    return new Cell(max[0], sum[1], sum[2], sum[3], sum[4], max[5], max[6], Phases.slowest(all));
  }

  /**
   * Waits for {@code request} as a rank waiting for another's compile should: it polls for 1 ms, then
   * sleeps between polls (a 32nd of the time waited so far, 10 us to 1 ms), so that on an oversubscribed
   * node it leaves the cores to the compile. A blocking {@code MPI_Bcast} would busy-poll in Open MPI all
   * along, which is no limit to compare with.
   */
  static void awaitPolitely(mpi.Request request) throws mpi.MPIException {
    long t0 = System.nanoTime();
    while (request.testStatus() == null) {
      long waited = System.nanoTime() - t0;
      if (waited > 1_000_000) {
        LockSupport.parkNanos(Math.max(10_000, Math.min(1_000_000, waited / 32)));
      }
    }
  }

  static List<String> kernelNames(KernelSource request) {
    if (!request.kernelNames().isEmpty()) {
      return request.kernelNames();
    }
    Matcher m = Pattern.compile("__kernel void (\\w+)").matcher(request.source());
    List<String> out = new ArrayList<>();
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  static void record(Cells json, String strategy, int rep, Cell c, OccaCaches.Lock lock) {
    Phases.Slowest ph = c.phases();
    if (rank == 0) {
      StringBuilder parts = new StringBuilder();
      for (int p = 0; p <= Phases.COUNT; p++) {
        parts.append(p == 0 ? "" : " ").append(p < Phases.COUNT ? Phases.NAMES.get(p) : "other").append(' ')
            .append(Math.round(ph.nanos()[p] / 1e6));
      }
      System.out.printf(Locale.ROOT, "bench n=%d %s %s rep %d: %.0f ms, %.1f cpu-s, %d compiles, %d fs ops; rank %d: %s"
          + "%s%s%n", size, program, strategy, rep, c.nanos() / 1e6, c.cpuNanos() / 1e9, c.compiles(), c.fsops(),
          ph.slowestRank(), parts, ph.receiverReadyNanos() < 0 ? "" : String.format(Locale.ROOT,
              "; slowest receiver load+launch %.1f ms", ph.receiverReadyNanos() / 1e6),
          rep < 0 ? " (warm-up, dropped)" : "");
    }
    if (rep < 0) {
      return;
    }
    List<Object> fields = new ArrayList<>(List.of("n", size, "program", program, "strategy", strategy, "rep", rep,
        "ms", BenchJson.round(c.nanos() / 1e6, 3), "cpu_s", BenchJson.round(c.cpuNanos() / 1e9, 3),
        "compiles", c.compiles(), "fsops", c.fsops(), "bytes", c.bytes(), "binary_bytes", c.binaryBytes(),
        "compile_ms", BenchJson.round(c.compileNanos() / 1e6, 3),
        "stale_ms", lock == null ? 0 : lock.staleMillis(), "poll_ms", lock == null ? 0 : lock.pollMillis(),
        "phase_rank", ph.slowestRank()));
    for (int p = 0; p <= Phases.COUNT; p++) {
      fields.add("phase_" + (p < Phases.COUNT ? Phases.NAMES.get(p) : "other") + "_ms");
      fields.add(BenchJson.round(ph.nanos()[p] / 1e6, 3));
    }
    fields.add("compile_launch_ms"); // what a naive rank pays for code: its compile and its first launches
    fields.add(BenchJson.round((ph.nanos()[Phases.COMPILE] + ph.nanos()[Phases.LAUNCH]) / 1e6, 3));
    fields.add("receiver_ready_ms");
    fields.add(ph.receiverReadyNanos() < 0 ? -1 : BenchJson.round(ph.receiverReadyNanos() / 1e6, 3));
    json.append(BenchJson.line(fields.toArray()));
  }
}
