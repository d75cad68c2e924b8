package org.mpibuild.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.mpibuild.programs.AllReduceLoop;

/**
 * Stream-ordered all-reduce against the manual pattern ({@code make bench-allreduce}): {@code AllReduceLoop}
 * on 2 ranks, a loop of kernel, all-reduce (float, sum), kernel at each size. A repetition is one job that
 * measures each mode twice at each size, in the order ordered, manual, manual, ordered or its mirror, alternating
 * from one repetition to the next (see {@link #run}). Per size: the median over the repetitions of the
 * per-repetition ratio ordered / manual (of each mode's mean) of the total time, and of the host (program)
 * thread's CPU time; beside them, the progress thread's CPU time, which the host thread's does not include.
 */
final class AllReduceBench {
  /**
   * Iterations and warm-up iterations per size. The warm-up lets the JIT compile what each mode runs (the
   * stream-ordered path is Java code on the device's thread; the manual pattern mostly native calls), so that the
   * figures are the loop's steady state.
   */
  static final String DEFAULT_SIZES = "1000:4096:2000,400:65536:800,100:1048576:200,10:16777216:20";
  static final int DEFAULT_REPS = 7;

  private AllReduceBench() {}

  /** One line {@code RESULT mode=...} of {@code AllReduceLoop}. */
  record Result(String mode, long bytes, int iterations, double seconds, double hostCpu, double progressCpu,
      double hostFree, double jitSeconds, int warmupLoops, boolean warmupQuiet) {}

  private static final Pattern RESULT = Pattern.compile("RESULT mode=(ordered|manual|kernels) bytes=(\\d+) iterations=(\\d+) "
      + "ranks=\\d+ correct=(true|false) seconds=([0-9.]+) host_cpu_seconds=([0-9.]+) progress_cpu_seconds=(-?[0-9.]+)"
      + " host_free_seconds=([0-9.]+) jit_seconds=([0-9.]+) warmup_loops=(\\d+) warmup_quiet=(true|false)");

  private static final Pattern COLLECTIVES = Pattern.compile("COLLECTIVES run=(.*)");

  /** The results a job printed; fails if any says its result was wrong. */
  static List<Result> parse(String output) {
    List<Result> out = new ArrayList<>();
    Matcher m = RESULT.matcher(output);
    while (m.find()) {
      if (!m.group(4).equals("true")) {
        throw new IllegalStateException("AllReduceLoop computed a wrong sum: " + m.group());
      }
      out.add(new Result(m.group(1), Long.parseLong(m.group(2)), Integer.parseInt(m.group(3)),
          Double.parseDouble(m.group(5)), Double.parseDouble(m.group(6)), Double.parseDouble(m.group(7)),
          Double.parseDouble(m.group(8)), Double.parseDouble(m.group(9)), Integer.parseInt(m.group(10)),
          Boolean.parseBoolean(m.group(11))));
    }
    return out;
  }

  /** Figures of one size over the repetitions. */
  record Row(long bytes, int iterations, List<Double> orderedSeconds, List<Double> manualSeconds,
      List<Double> totalRatio, List<Double> orderedHost, List<Double> manualHost, List<Double> hostRatio,
      List<Double> orderedProgress, List<Double> orderedFree, List<Double> manualFree, List<Double> kernelsHost,
      List<Double> beyondKernelsRatio, List<Double> orderedJit, List<Double> manualJit, List<Double> warmupLoops,
      List<Boolean> warmupQuiet) {}

  /**
   * Groups the repetitions' results by size (in the order first seen) and pairs each repetition's ordered with
   * its manual result: each mode's mean over its loops in that repetition (the JIT time: the largest), so that a
   * repetition of ordered, manual, manual, ordered compares the two modes at the same mean time in the job. Each
   * repetition must hold as many results of each mode at each size (at least one), all with one number of
   * iterations.
   */
  static List<Row> rows(List<List<Result>> reps) {
    Map<Long, Row> rows = new LinkedHashMap<>();
    for (List<Result> rep : reps) {
      Map<Long, Map<String, List<Result>>> bySize = new LinkedHashMap<>();
      for (Result r : rep) {
        bySize.computeIfAbsent(r.bytes(), b -> new TreeMap<>()).computeIfAbsent(r.mode(), x -> new ArrayList<>()).add(r);
      }
      for (Map.Entry<Long, Map<String, List<Result>>> e : bySize.entrySet()) {
        List<Result> ordered = e.getValue().getOrDefault("ordered", List.of());
        List<Result> manual = e.getValue().getOrDefault("manual", List.of());
        if (ordered.size() != manual.size()) {
          throw new IllegalArgumentException(ordered.size() + " ordered and " + manual.size() + " manual results at "
              + e.getKey() + " bytes in one repetition");
        }
        Result o = mean(ordered);
        Result m = mean(manual);
        if (o == null || m == null) {
          throw new IllegalArgumentException("no pair at " + e.getKey() + " bytes: " + e.getValue().keySet());
        }
        Row row = rows.computeIfAbsent(e.getKey(), b -> new Row(b, o.iterations(), new ArrayList<>(),
            new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(),
            new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(),
            new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>()));
        Result k = mean(e.getValue().get("kernels"));
        if (k != null) {
          row.kernelsHost().add(k.hostCpu());
          row.beyondKernelsRatio().add((o.hostCpu() - k.hostCpu()) / (m.hostCpu() - k.hostCpu()));
        }
        row.orderedSeconds().add(o.seconds());
        row.manualSeconds().add(m.seconds());
        row.totalRatio().add(o.seconds() / m.seconds());
        row.orderedHost().add(o.hostCpu());
        row.manualHost().add(m.hostCpu());
        row.hostRatio().add(o.hostCpu() / m.hostCpu());
        row.orderedProgress().add(o.progressCpu());
        row.orderedFree().add(o.hostFree());
        row.manualFree().add(m.hostFree());
        row.orderedJit().add(o.jitSeconds());
        row.manualJit().add(m.jitSeconds());
        row.warmupLoops().add((double) o.warmupLoops());
        row.warmupLoops().add((double) m.warmupLoops());
        row.warmupQuiet().add(o.warmupQuiet());
        row.warmupQuiet().add(m.warmupQuiet());
      }
    }
    for (Row r : rows.values()) {
      if (r.totalRatio().size() != reps.size()) {
        throw new IllegalArgumentException(r.bytes() + " bytes measured in " + r.totalRatio().size() + " of "
            + reps.size() + " repetitions");
      }
    }
    return new ArrayList<>(rows.values());
  }

  /**
   * One mode's loops in one repetition as one result: the mean of each time (the progress thread's -1, unknown, if
   * any loop's is), the largest JIT time and warm-up count, quiet only if every warm-up was; null for none. The
   * loops must have one number of iterations.
   */
  static Result mean(List<Result> loops) {
    if (loops == null || loops.isEmpty()) {
      return null;
    }
    Result first = loops.get(0);
    double seconds = 0;
    double host = 0;
    double progress = 0;
    double free = 0;
    double jit = 0;
    int warmup = 0;
    boolean quiet = true;
    boolean progressKnown = true;
    for (Result r : loops) {
      if (r.iterations() != first.iterations()) {
        throw new IllegalArgumentException(first.mode() + " at " + first.bytes() + " bytes ran " + r.iterations()
            + " and " + first.iterations() + " iterations in one repetition");
      }
      seconds += r.seconds();
      host += r.hostCpu();
      progress += r.progressCpu();
      free += r.hostFree();
      jit = Math.max(jit, r.jitSeconds());
      warmup = Math.max(warmup, r.warmupLoops());
      quiet &= r.warmupQuiet();
      progressKnown &= r.progressCpu() >= 0; // -1: the loop could not read it
    }
    int n = loops.size();
    return new Result(first.mode(), first.bytes(), first.iterations(), seconds / n, host / n,
        progressKnown ? progress / n : -1, free / n, jit, warmup, quiet);
  }

  /** "4KiB", "16MiB": a size in whole KiB or MiB where it is one, else in bytes. */
  static String size(long bytes) {
    if (bytes >= 1 << 20 && bytes % (1 << 20) == 0) {
      return (bytes >> 20) + "MiB";
    }
    return bytes >= 1024 && bytes % 1024 == 0 ? (bytes >> 10) + "KiB" : bytes + "B";
  }

  /** "1.23 [1.10-1.40]": the median and its 95% interval, or with fewer than 6 values the range. */
  static String cell(List<Double> xs, int decimals) {
    String f = "%." + decimals + "f";
    Stats.Interval i = Stats.intervalOrRange(xs);
    return String.format(Locale.ROOT, f + " [" + f + "-" + f + "]", Stats.median(xs), i.low(), i.high());
  }

  /** The report: a table and the {@code bench:} line with both goals' verdicts. */
  static String report(List<Row> rows, int reps, String operationsRun, String binding) {
    StringBuilder md = new StringBuilder("The " + label(binding) + ". Kernel, all-reduce (float, sum), kernel on 2 "
        + "ranks, stream-ordered (`allreduceAfter`) against the manual pattern (`clFinish`, blocking read, "
        + "`MPI_Allreduce`, blocking write), paired per repetition; ").append(reps)
        .append(" repetitions, each one job that measured each mode twice per size, ordered, manual, manual, ordered "
            + "or its mirror, alternating (the ratio compares the modes' means in the job); each loop after its warm-up "
            + "loops, in a job that first ran every size once unmeasured. Median [95% interval, or the range below 6 "
            + "repetitions]; times are per loop, host = the program thread's CPU time (the slowest rank's), progress = "
            + "the messenger's progress thread's CPU time, not included in host; host free = wall time until the "
            + "program thread had enqueued (ordered) or done (manual) the loop; kernels = the host CPU time of the same "
            + "loop without any all-reduce (what launching the two kernels costs in both modes), and beyond kernels = "
            + "(ordered - kernels) / (manual - kernels); JIT = the CPU time of the JVM's JIT compiler threads during "
            + "a mode's loops (the largest of the ranks' and of the mode's two loops); each loop follows warm-up loops "
            + "repeated until one saw at most " + AllReduceLoop.QUIET_JIT_MILLIS + " ms of it on every rank, or "
            + AllReduceLoop.MAX_WARMUP_LOOPS + " of them (warm-up loops: the range over both modes' loops, and how "
            + "many of them stopped at that cap without a quiet one). The goals judge the total time and the host CPU "
            + "time. "
            + "Collectives ran ").append(operationsRun).append(".\n\n"
            + "| size | iterations | ordered s | manual s | ordered / manual (total) | host CPU ordered s | host CPU manual s "
            + "| host CPU ordered / manual | host CPU kernels only s | host CPU beyond kernels, ordered / manual "
            + "| progress thread CPU s (ordered) | host free after, ordered s | host free after, manual s "
            + "| JIT ordered s | JIT manual s | warm-up loops |\n"
            + "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    StringBuilder line = new StringBuilder("bench: allreduce binding=" + binding + " ranks=2 reps=" + reps);
    boolean totalMet = true;
    boolean hostMet = true;
    for (Row r : rows) {
      double total = Stats.median(r.totalRatio());
      double host = Stats.median(r.hostRatio());
      totalMet &= total <= 1.0;
      hostMet &= host <= 0.10;
      String size = size(r.bytes());
      boolean kernels = !r.kernelsHost().isEmpty();
      md.append(String.format(Locale.ROOT, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s "
          + "| %.0f-%.0f, %d not quiet |%n",
          size, r.iterations(), cell(r.orderedSeconds(), 3), cell(r.manualSeconds(), 3), cell(r.totalRatio(), 2),
          cell(r.orderedHost(), 3), cell(r.manualHost(), 3), cell(r.hostRatio(), 3),
          kernels ? cell(r.kernelsHost(), 3) : "-", kernels ? cell(r.beyondKernelsRatio(), 3) : "-",
          cell(r.orderedProgress(), 3), cell(r.orderedFree(), 3), cell(r.manualFree(), 3), cell(r.orderedJit(), 3),
          cell(r.manualJit(), 3), Stats.min(r.warmupLoops()), Stats.max(r.warmupLoops()),
          r.warmupQuiet().stream().filter(q -> !q).count()));
      line.append(String.format(Locale.ROOT, " total_%s=%.2f host_%s=%.3f", size, total, size, host));
      if (kernels) {
        line.append(String.format(Locale.ROOT, " host_beyond_kernels_%s=%.3f", size,
            Stats.median(r.beyondKernelsRatio())));
      }
    }
    line.append(" goal_total_le_1.0=").append(totalMet ? "met" : "missed")
        .append(" goal_host_le_0.10=").append(hostMet ? "met" : "missed");
    md.append('\n').append(line).append('\n');
    return md.toString();
  }

  /** One repetition of {@code EventCallbackCost}: microseconds per command, plain and with a callback on each. */
  record CallbackCost(double plainMicros, double callbackMicros) {}

  private static final Pattern CALLBACK = Pattern.compile("CALLBACK rep=\\d+ plain_us=([0-9.]+) callback_us=([0-9.]+)");

  /** The repetitions {@code EventCallbackCost} printed. */
  static List<CallbackCost> parseCallbackCosts(String output) {
    List<CallbackCost> out = new ArrayList<>();
    Matcher m = CALLBACK.matcher(output);
    while (m.find()) {
      out.add(new CallbackCost(Double.parseDouble(m.group(1)), Double.parseDouble(m.group(2))));
    }
    return out;
  }

  /** The paragraph and {@code bench:} line on what an event callback adds per command. */
  static String callbackReport(List<CallbackCost> costs) {
    List<Double> plain = new ArrayList<>();
    List<Double> callback = new ArrayList<>();
    List<Double> added = new ArrayList<>();
    for (CallbackCost c : costs) {
      plain.add(c.plainMicros());
      callback.add(c.callbackMicros());
      added.add(c.callbackMicros() - c.plainMicros());
    }
    return String.format(Locale.ROOT, "What a JOCL event callback adds to the device's own work "
        + "(`EventCallbackCost`, one process, %d chained tiny kernels released at once, paired and alternating, "
        + "%d repetitions): %s µs per kernel plain, %s µs with an empty `clSetEventCallback(CL_COMPLETE)` on each, "
        + "%s µs added per callback.%n%nbench: allreduce_callback reps=%d plain_us=%.2f callback_us=%.2f "
        + "added_us=%.2f%n", 400, costs.size(), cell(plain, 2), cell(callback, 2), cell(added, 2), costs.size(),
        Stats.median(plain), Stats.median(callback), Stats.median(added));
  }

  /**
   * Runs {@code reps} repetitions and writes allreduce.md and allreduce.json. A repetition is one job that measures
   * each mode twice at each size, ordered, manual, manual, ordered in even repetitions and the mirror in odd ones,
   * then the kernels-only loop (its host CPU time is that of JOCL's kernel launches alone). One job pairs the modes
   * under the same conditions: a job's loops of both modes ran about 1.5 times slower than another's at 1 MiB, in
   * ad-hoc runs, from one job to the next, so that modes measured in jobs of their own drew that factor apart.
   * Until 2026-12-04 each mode ran in jobs of its own, because the manual pattern's loop ran slower once the
   * ordered mode had run in the same processes; that was the JIT recompiling the loop method the modes shared
   * ({@code AllReduceLoop} now has one method per mode and waits for the JIT to be quiet), and in ad-hoc jobs of
   * both modes since, the manual loops took what they took in jobs of their own.
   */
  static void run(Path repo, Path out, int reps, String sizes, List<String> bindings) throws Exception {
    // the MPI alone first: a few seconds, and a job that cannot run fails before the long part
    StringBuilder kindsMd = new StringBuilder();
    List<AllReduceKinds.KindTime> kinds = AllReduceKinds.mpiKinds(repo, out,
        Stats.roundUpToMultiple(Math.max(reps, 7), AllReduceKinds.KIND_ROTATION), sizes, kindsMd);
    StringBuilder md = new StringBuilder();
    List<Object> raw = new ArrayList<>();
    for (String binding : bindings) {
      md.append(run(repo, reps, sizes, binding, raw)).append('\n');
    }
    String costOutput = BenchReport.run(List.of("java", "-cp", System.getProperty("java.class.path"),
        "org.mpibuild.programs.EventCallbackCost", Integer.toString(Math.max(reps, 7))), Map.of(), 300);
    List<CallbackCost> costs = parseCallbackCosts(costOutput);
    if (costs.isEmpty()) {
      throw new IllegalStateException("EventCallbackCost printed no result:\n" + costOutput);
    }
    md.append(callbackReport(costs)).append(kindsMd);
    Files.writeString(out.resolve("allreduce.md"), md);
    List<Object> rawCosts = new ArrayList<>();
    for (CallbackCost c : costs) {
      rawCosts.add(BenchJson.object("plain_us", c.plainMicros(), "callback_us", c.callbackMicros()));
    }
    Files.writeString(out.resolve("allreduce.json"), BenchJson.pretty(BenchJson.object("sizes", sizes, "reps", reps,
        "bindings", new ArrayList<Object>(bindings), "runs", raw, "event_callback_cost", rawCosts,
        "mpi_kinds", AllReduceKinds.rawKinds(kinds))));
    System.out.println();
    System.out.println(md);
  }

  /** "mpi.jar binding", "FFM binding": how the report names a binding. */
  static String label(String binding) {
    return switch (binding) {
      case "mpijava" -> "mpi.jar binding";
      case "ffm" -> "FFM binding";
      default -> throw new IllegalArgumentException("a binding is mpijava or ffm, not '" + binding + "'");
    };
  }

  /** The repetitions on one binding: its report, and its raw results added to {@code raw}. */
  private static String run(Path repo, int reps, String sizes, String binding, List<Object> raw) throws Exception {
    List<List<Result>> all = new ArrayList<>();
    String operationsRun = "where the messenger did not say";
    // the binding set either way: a caller's own MPI_BUILD_BINDING must not choose it
    Map<String, String> env = Map.of("MPI_BUILD_CACHE", "off", "MPI_BUILD_BINDING", binding,
        "MPI_BUILD_JAVA", BenchReport.ffmJava(repo),
        "MPI_BUILD_JAVA_OPTS", "-XX:+UseSerialGC -Xmx1g -XX:MaxDirectMemorySize=2g --enable-native-access=ALL-UNNAMED");
    for (int rep = 0; rep < reps; rep++) {
      String modes = rep % 2 == 0 ? "ordered,manual,manual,ordered,kernels" : "manual,ordered,ordered,manual,kernels";
      // On the FFM binding's JDK (mpi.jar runs there too), with native access: collectives run on the queue
      String output = BenchReport.run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", "2", "-cp",
          System.getProperty("java.class.path"), "org.mpibuild.programs.AllReduceLoop", sizes, modes), env, 900);
      Matcher where = COLLECTIVES.matcher(output);
      if (where.find()) {
        operationsRun = where.group(1).trim();
      }
      List<Result> results = parse(output);
      if (results.isEmpty()) {
        throw new IllegalStateException("AllReduceLoop " + modes + " printed no result:\n" + output);
      }
      all.add(results);
      for (Result r : results) {
        System.out.printf(Locale.ROOT, "bench allreduce: %s, repetition %d (%s), %s %s: %.3f s, host CPU %.3f s, "
            + "progress thread CPU %.3f s, host free after %.3f s, JIT %.3f s after %d warm-up loops%s%n", binding,
            rep + 1, modes, size(r.bytes()), r.mode(), r.seconds(), r.hostCpu(), r.progressCpu(), r.hostFree(),
            r.jitSeconds(), r.warmupLoops(), r.warmupQuiet() ? "" : " (not quiet)");
      }
    }
    List<Row> rows = rows(all);
    for (int rep = 0; rep < all.size(); rep++) {
      for (Result r : all.get(rep)) {
        raw.add(BenchJson.object("binding", binding, "rep", rep + 1, "mode", r.mode(), "bytes", r.bytes(),
            "iterations", r.iterations(), "seconds", r.seconds(), "host_cpu_seconds", r.hostCpu(),
            "progress_cpu_seconds", r.progressCpu(), "host_free_seconds", r.hostFree(), "jit_seconds", r.jitSeconds(),
            "warmup_loops", r.warmupLoops(), "warmup_quiet", r.warmupQuiet()));
      }
    }
    return report(rows, reps, operationsRun, binding);
  }
}
