package org.mpibuild.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Stream-ordered messages against the manual pattern: {@code make bench-stream}, behind {@link BenchReport}.
 */
final class StreamBench {
  private StreamBench() {}

  /** The measured rounds of the ping-pong ({@link #run}). */
  static final int STREAM_ROUNDS = 50;
  /**
   * The rounds each loop of the ping-pong runs first, unmeasured, with the same messenger: the JIT compiles the
   * stream-ordered path at its first messages, on the cores the kernels run on.
   */
  static final int STREAM_WARMUP_ROUNDS = 5;
  /**
   * The rounds each loop of the ping-pong runs before its warm-up rounds, unmeasured, with delays 200 times shorter
   * (Pipeline's QUICK): with a message every 80 ms, the stream-ordered path would still be compiled by the JIT
   * during the measured rounds, on the kernels' cores.
   */
  static final int STREAM_QUICK_ROUNDS = 2000;

  /**
   * Stream-ordered messages against the manual pattern (finish the queue, then send; receive, then write
   * with a blocking call): a ping-pong of {@value #STREAM_ROUNDS} rounds with kernels of random length on 2 ranks,
   * {@code reps} repetitions. A repetition is one job that runs each mode twice, ordered, manual, manual, ordered or
   * its mirror, alternating from one repetition to the next, every loop after {@value #STREAM_QUICK_ROUNDS} quick
   * and {@value #STREAM_WARMUP_ROUNDS} ordinary unmeasured rounds and with the same random delays; its ratio
   * compares the modes' means. On the FFM binding's JDK with native access, where the messages run on the queue
   * itself ({@code run=} in the line). Reports the time until the last message arrived and until the host was
   * free, and the median of the per-repetition ratios.
   */
  static void run(Path repo, Path out, int reps) throws Exception {
    Pattern run = Pattern.compile("RUN mode=ordered (.*)");
    Map<String, List<Double>> total = new TreeMap<>();
    Map<String, List<Double>> host = new TreeMap<>();
    Map<String, List<Double>> jit = new TreeMap<>();
    List<Double> ratios = new ArrayList<>();
    String where = "?";
    for (int rep = 0; rep < reps; rep++) {
      String modes = rep % 2 == 0 ? "ordered,manual,manual,ordered" : "manual,ordered,ordered,manual";
      String output = BenchReport.run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", "2", "-cp",
          System.getProperty("java.class.path"), "org.mpibuild.programs.Pipeline", modes,
          Integer.toString(STREAM_ROUNDS), "20000", Integer.toString(rep), Integer.toString(STREAM_WARMUP_ROUNDS),
          Integer.toString(STREAM_QUICK_ROUNDS)),
          Map.of("MPI_BUILD_CACHE", "off", "MPI_BUILD_JAVA", BenchReport.ffmJava(repo),
              "MPI_BUILD_JAVA_OPTS", "--enable-native-access=ALL-UNNAMED"), 900);
      Map<String, List<double[]>> loops = streamLoops(output, 2);
      Matcher r = run.matcher(output);
      if (r.find()) {
        where = r.group(1).trim();
      }
      for (Map.Entry<String, List<double[]>> e : loops.entrySet()) {
        for (double[] loop : e.getValue()) {
          System.out.printf(Locale.ROOT, "bench stream: repetition %d, %s: %.3f s, host free after %.3f s, JIT %.3f s%n",
              rep + 1, e.getKey(), loop[0], loop[1], loop[2]);
        }
        total.computeIfAbsent(e.getKey(), x -> new ArrayList<>()).add(meanOf(e.getValue(), 0));
        host.computeIfAbsent(e.getKey(), x -> new ArrayList<>()).add(meanOf(e.getValue(), 1));
        jit.computeIfAbsent(e.getKey(), x -> new ArrayList<>()).add(meanOf(e.getValue(), 2));
      }
      ratios.add(meanOf(loops.get("ordered"), 0) / meanOf(loops.get("manual"), 0));
    }
    Stats.Interval interval = Stats.intervalOrRange(ratios);
    String line = String.format(Locale.ROOT, "bench: stream rounds=%d warmup_rounds=%d quick_rounds=%d ranks=2 reps=%d "
        + "ordered_s=%.3f manual_s=%.3f ordered_over_manual=%.2f ordered_over_manual_low=%.2f "
        + "ordered_over_manual_high=%.2f host_busy_ordered_s=%.3f host_busy_manual_s=%.3f jit_ordered_s=%.3f "
        + "jit_manual_s=%.3f run=%s",
        STREAM_ROUNDS, STREAM_WARMUP_ROUNDS, STREAM_QUICK_ROUNDS, reps, Stats.median(total.get("ordered")),
        Stats.median(total.get("manual")),
        Stats.median(ratios), interval.low(), interval.high(), Stats.median(host.get("ordered")), Stats.median(host.get("manual")),
        Stats.median(jit.get("ordered")), Stats.median(jit.get("manual")), where);
    Files.writeString(out.resolve("stream.txt"), line + "\n" + total + "\n" + host + "\n" + "jit " + jit + "\n"
        + "ratios " + ratios + "\n");
    System.out.println(line);
  }

  private static final Pattern STREAM_RESULT = Pattern.compile("RESULT mode=(ordered|manual) .*correct=true "
      + "seconds=([0-9.]+) host_seconds=([0-9.]+) jit_seconds=([0-9.]+)");

  /**
   * The loops of one ping-pong job by mode: per loop, its seconds, host seconds and JIT seconds. Fails unless
   * each mode printed {@code each} correct results.
   */
  static Map<String, List<double[]>> streamLoops(String output, int each) {
    Map<String, List<double[]>> loops = new TreeMap<>();
    Matcher m = STREAM_RESULT.matcher(output);
    while (m.find()) {
      loops.computeIfAbsent(m.group(1), x -> new ArrayList<>()).add(new double[] {Double.parseDouble(m.group(2)),
          Double.parseDouble(m.group(3)), Double.parseDouble(m.group(4))});
    }
    for (String mode : List.of("ordered", "manual")) {
      if (loops.getOrDefault(mode, List.of()).size() != each) {
        throw new IllegalStateException("Pipeline printed " + loops.getOrDefault(mode, List.of()).size() + " correct "
            + mode + " results, not " + each + ":\n" + output);
      }
    }
    return loops;
  }

  /** The mean of column {@code column} of {@code rows}. */
  static double meanOf(List<double[]> rows, int column) {
    double sum = 0;
    for (double[] row : rows) {
      sum += row[column];
    }
    return sum / rows.size();
  }
}
