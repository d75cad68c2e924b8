package org.mpibuild.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How long each kind of all-reduce call (blocking, non-blocking, persistent) takes in the MPI alone, for the
 * all-reduce benchmark ({@link AllReduceBench}): {@code allreduce_kinds.c} under Open MPI's {@code mpirun}.
 */
final class AllReduceKinds {
  /**
   * The repetitions of {@code allreduce_kinds.c} are a multiple of this, so that each of its kinds (3, or 2
   * without persistent collectives) comes first in as many of them.
   */
  static final int KIND_ROTATION = 6;

  private AllReduceKinds() {}

  /** One measurement of {@code allreduce_kinds.c}: a kind of MPI call at a size in one repetition. */
  record KindTime(long bytes, int rep, String kind, int iterations, double seconds) {}

  private static final Pattern KINDS = Pattern.compile(
      "KINDS bytes=(\\d+) rep=(\\d+) kind=(blocking|nonblocking|persistent) iterations=(\\d+) seconds=([0-9.]+)");

  /** The measurements {@code allreduce_kinds} printed. */
  static List<KindTime> parseKinds(String output) {
    List<KindTime> out = new ArrayList<>();
    Matcher m = KINDS.matcher(output);
    while (m.find()) {
      out.add(new KindTime(Long.parseLong(m.group(1)), Integer.parseInt(m.group(2)), m.group(3),
          Integer.parseInt(m.group(4)), Double.parseDouble(m.group(5))));
    }
    return out;
  }


  /**
   * The paragraph, table and {@code bench:} line on how long each kind of all-reduce call takes in the MPI alone:
   * per size, the blocking call's time and, paired per repetition, the non-blocking and persistent calls' times
   * over it. Every repetition of a size must hold one blocking and one non-blocking time, and a persistent time in
   * all of them or in none, each kind with the size's number of iterations.
   */
  static String kindsReport(List<KindTime> times) {
    StringBuilder md = new StringBuilder("| size | iterations | blocking s | non-blocking / blocking | "
        + "persistent / blocking |\n|---|---|---|---|---|\n");
    StringBuilder line = new StringBuilder("bench: allreduce_mpi_kinds ranks=2");
    int reps = 0;
    for (Map.Entry<Long, Map<Integer, Map<String, KindTime>>> size : bySizeAndRep(times).entrySet()) {
      reps = sizeRow(size.getKey(), size.getValue().values(), md, line);
    }
    return String.format(Locale.ROOT, "How long each kind of all-reduce call takes in the MPI alone "
        + "(`allreduce_kinds.c`, C, float sums on 2 ranks, one job, the order of the kinds rotating per repetition, "
        + "%d repetitions): the blocking call's seconds per loop, and the per-repetition ratios of the non-blocking "
        + "and the persistent call to it; median [95%% interval, or the range below 6 repetitions]. The manual pattern "
        + "uses the blocking `MPI_Allreduce`; the stream-ordered all-reduce a non-blocking or persistent request that "
        + "it tests until it completes. The program tests without pause, where the messenger spins for a bounded time "
        + "and then parks: these ratios are the MPI's own, a lower bound for the messenger's.%n%n%s%n%s reps=%d%n",
        reps, md, line, reps);
  }

  /** The times by size, then repetition, then kind; two times of one kind at a size in a repetition are refused. */
  private static Map<Long, Map<Integer, Map<String, KindTime>>> bySizeAndRep(List<KindTime> times) {
    Map<Long, Map<Integer, Map<String, KindTime>>> bySize = new TreeMap<>();
    for (KindTime t : times) {
      KindTime earlier = bySize.computeIfAbsent(t.bytes(), b -> new TreeMap<>())
          .computeIfAbsent(t.rep(), r -> new TreeMap<>()).put(t.kind(), t);
      if (earlier != null) {
        throw new IllegalArgumentException("two " + t.kind() + " times at " + t.bytes() + " bytes in repetition "
            + t.rep());
      }
    }
    return bySize;
  }

  /**
   * One size's row of the table and figures of the line, from its repetitions: each must hold one blocking and one
   * non-blocking time, and a persistent time in all of them or in none, each kind with one number of iterations.
   * Returns how many repetitions there were.
   */
  private static int sizeRow(long bytes, Collection<Map<String, KindTime>> reps, StringBuilder md,
      StringBuilder line) {
    List<Double> blocking = new ArrayList<>();
    List<Double> nonblocking = new ArrayList<>();
    List<Double> persistent = new ArrayList<>();
    int iterations = -1;
    for (Map<String, KindTime> rep : reps) {
      KindTime b = rep.get("blocking");
      KindTime n = rep.get("nonblocking");
      if (b == null || n == null) {
        throw new IllegalArgumentException("a repetition at " + bytes + " bytes lacks the blocking or the "
            + "non-blocking call: " + rep.keySet());
      }
      for (KindTime k : rep.values()) {
        if (iterations >= 0 && k.iterations() != iterations) {
          throw new IllegalArgumentException("at " + bytes + " bytes, " + k.iterations() + " iterations of "
              + k.kind() + " against " + iterations + " elsewhere");
        }
        iterations = k.iterations();
      }
      blocking.add(b.seconds());
      nonblocking.add(n.seconds() / b.seconds());
      KindTime p = rep.get("persistent");
      if (p != null) {
        persistent.add(p.seconds() / b.seconds());
      }
    }
    if (!persistent.isEmpty() && persistent.size() != blocking.size()) {
      throw new IllegalArgumentException("at " + bytes + " bytes, a persistent time in " + persistent.size()
          + " of " + blocking.size() + " repetitions");
    }
    String name = AllReduceBench.size(bytes);
    md.append(String.format(Locale.ROOT, "| %s | %d | %s | %s | %s |%n", name, iterations,
        AllReduceBench.cell(blocking, 4), AllReduceBench.cell(nonblocking, 2),
        persistent.isEmpty() ? "none (the MPI has no persistent collectives)" : AllReduceBench.cell(persistent, 2)));
    line.append(String.format(Locale.ROOT, " nonblocking_%s=%.2f", name, Stats.median(nonblocking)));
    if (!persistent.isEmpty()) {
      line.append(String.format(Locale.ROOT, " persistent_%s=%.2f", name, Stats.median(persistent)));
    }
    return blocking.size();
  }

  /**
   * Builds {@code allreduce_kinds.c} with {@code mpicc} and runs it with Open MPI's {@code mpirun} on 2 ranks at
   * the bench's sizes, {@code reps} repetitions, appending its report to {@code md}; where {@code mpicc} or
   * {@code mpirun} cannot be started, says so in the report instead.
   */
  static List<KindTime> mpiKinds(Path repo, Path out, int reps, String sizes, StringBuilder md)
      throws Exception {
    List<String> plain = new ArrayList<>();
    for (String size : sizes.split(",")) {
      String[] parts = size.split(":");
      plain.add(parts[0] + ":" + parts[1]); // no warm-up: the program runs every kind once unmeasured first
    }
    String output;
    try {
      Path program = BenchReport.buildC(repo, out, "allreduce_kinds");
      output = BenchReport.run(BenchReport.mpirunTwoRanks(program, Integer.toString(reps), String.join(",", plain)),
          Map.of(), 600);
    } catch (java.io.IOException e) { // no mpicc or no mpirun to start
      md.append(String.format(Locale.ROOT, "%nHow long each kind of all-reduce call takes in the MPI alone: not "
          + "measured (%s).%n", e.getMessage()));
      return List.of();
    }
    List<KindTime> kinds = parseKinds(output);
    if (kinds.isEmpty()) {
      throw new IllegalStateException("allreduce_kinds printed no result:\n" + output);
    }
    md.append('\n').append(kindsReport(kinds));
    return kinds;
  }

  static List<Object> rawKinds(List<KindTime> kinds) {
    List<Object> raw = new ArrayList<>();
    for (KindTime k : kinds) {
      raw.add(BenchJson.object("bytes", k.bytes(), "rep", k.rep(), "kind", k.kind(), "iterations", k.iterations(),
          "seconds", k.seconds()));
    }
    return raw;
  }
}
