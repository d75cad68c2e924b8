package org.mpibuild.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * The cost model of docs/scale.md: time until every rank is ready, and metadata operations on the shared
 * file system, for N = 10^2 to 10^5 ranks, under naive builds, OCCA up to v1.1, OCCA from v1.2 and
 * mpi-build. Every parameter is a field of {@link Params}, stated with its source in docs/scale.md.
 *
 * <p>usage: ScaleModel DOCS_DIR  (writes the table into scale.md between its markers, and scale-model.png)
 */
final class ScaleModel {
  private ScaleModel() {}

  /**
   * The model's parameters.
   *
   * @param compileSeconds one compile of the program
   * @param readySeconds loading the binary and the first launch of every kernel, on every rank
   * @param binaryBytes the binary
   * @param latencySeconds one MPI message's latency between nodes
   * @param bandwidth bytes per second of one link
   * @param messageSeconds what a rank spends per small message it receives or sends (the deadline's arrivals)
   * @param createsPerSecond the metadata server's rate for file creates (and renames, mkdir, rmdir)
   * @param statsPerSecond its rate for stats (and lookups, opens of existing files)
   * @param fileReadBandwidth bytes per second that the storage serves one file at (one stripe)
   * @param staleSeconds OCCA's stale age of a lock
   * @param pollSeconds OCCA's polling interval
   */
  record Params(double compileSeconds, double readySeconds, double binaryBytes, double latencySeconds,
      double bandwidth, double messageSeconds, double createsPerSecond, double statsPerSecond,
      double fileReadBandwidth, double staleSeconds, double pollSeconds) {}

  /** The figures docs/scale.md states, with their sources there. */
  static final Params STATED = new Params(23, 1.0, 1 << 20, 1.5e-6, 12.5e9, 0.5e-6, 29_000, 544_000, 2e9, 20, 0.5);

  /** One strategy's projection at N ranks. */
  record Projection(String strategy, long ranks, double seconds, double metadataOps, double compiles) {}

  static double log2(double n) {
    return Math.log(n) / Math.log(2);
  }

  /**
   * The broadcast of B bytes to N ranks: the better of a binomial tree, {@code ceil(log2 N) (a + B/b)}, and
   * a scatter then ring all-gather (van de Geijn), {@code (log2 N + N - 1) a + 2 B (N - 1) / (N b)}.
   */
  static double broadcastSeconds(Params p, long n) {
    if (n <= 1) {
      return 0;
    }
    double binomial = Math.ceil(log2(n)) * (p.latencySeconds() + p.binaryBytes() / p.bandwidth());
    double scatterAllgather = (Math.ceil(log2(n)) + n - 1) * p.latencySeconds()
        + 2 * p.binaryBytes() * (n - 1) / (n * p.bandwidth());
    return Math.min(binomial, scatterAllgather);
  }

  /** An all-reduce of a few bytes: a reduce and a broadcast up and down a binomial tree. */
  static double allReduceSeconds(Params p, long n) {
    return n <= 1 ? 0 : 2 * Math.ceil(log2(n)) * p.latencySeconds();
  }

  /** Every rank compiles for itself; nothing touches the shared file system. */
  static Projection naive(Params p, long n) {
    return new Projection("naive", n, p.compileSeconds() + p.readySeconds(), 0, n);
  }

  /**
   * OCCA from v1.2: every rank finds no binary (a stat), compiles, creates a temporary file and renames
   * it into place. The creates and renames reach the metadata server together, at the end of the compile.
   */
  static Projection occa12(Params p, long n) {
    double burst = n / p.statsPerSecond() + 2.0 * n / p.createsPerSecond();
    return new Projection("OCCA >=1.2", n, p.compileSeconds() + burst + p.readySeconds(), 3.0 * n, n);
  }

  /**
   * OCCA up to v1.1: one rank takes the lock directory and compiles; the others fail to take it and poll
   * it. A compile longer than the stale age is taken over once (as measured here: 2 compiles), so the wait
   * is the stale age plus a compile; then every rank stats and opens the binary and reads it from the one
   * place it is stored.
   */
  static Projection lock(Params p, long n) {
    boolean takenOver = p.compileSeconds() > p.staleSeconds();
    double waited = takenOver ? p.staleSeconds() + p.compileSeconds() : p.compileSeconds();
    double polls = Math.ceil(waited / p.pollSeconds());
    double read = 2.0 * n / p.statsPerSecond() + n * p.binaryBytes() / p.fileReadBandwidth();
    double ops = n * (1 + 1 + polls + 2) + (takenOver ? 2 : 1) * 4;
    return new Projection("OCCA <=1.1", n, waited + p.pollSeconds() / 2 + read + p.readySeconds(), ops,
        takenOver ? 2 : 1);
  }

  /**
   * mpi-build: two agreements (settings at start-up are not counted; the request, then the load), the
   * deadline's arrival messages at rank 0 (N - 1 received, N - 1 sent back), one compile with the cache's lock held (a constant 11
   * operations on the shared directory, as counted by the benchmark), the broadcast and the load.
   */
  static Projection mpiBuild(Params p, long n) {
    double agree = 2 * allReduceSeconds(p, n);
    double arrivals = 2.0 * (n - 1) * p.messageSeconds();
    double seconds = agree + arrivals + p.compileSeconds() + broadcastSeconds(p, n) + p.readySeconds();
    return new Projection("mpi-build", n, seconds, 11, 1);
  }

  static List<Projection> all(Params p, long n) {
    return List.of(naive(p, n), lock(p, n), occa12(p, n), mpiBuild(p, n));
  }

  static final long[] RANKS = {100, 1_000, 10_000, 100_000};

  static String table(Params p) {
    StringBuilder sb = new StringBuilder("| N | naive | OCCA <=1.1 | OCCA >=1.2 | mpi-build |\n|---|---|---|---|---|\n");
    for (long n : RANKS) {
      sb.append(String.format(Locale.ROOT, "| %,d |", n));
      for (Projection x : all(p, n)) {
        sb.append(String.format(Locale.ROOT, " %.1f s; %,.0f ops; %,.0f compiles |", x.seconds(), x.metadataOps(),
            x.compiles()));
      }
      sb.append('\n');
    }
    return sb.toString();
  }

  static final String BEGIN = "<!-- scale-model:begin -->";
  static final String END = "<!-- scale-model:end -->";

  public static void main(String[] args) throws Exception {
    Path docs = Path.of(args[0]);
    String md = table(STATED);
    Path page = docs.resolve("scale.md");
    Files.writeString(page, Publish.replaceBetween(Files.readString(page), BEGIN, END, md));
    chart(STATED, docs.resolve("scale-model.png"));
    System.out.println(md);
    System.out.println("scale-model: wrote the table into " + page + ", and " + docs.resolve("scale-model.png"));
  }

  static void chart(Params p, Path png) throws Exception {
    List<Double> xs = new ArrayList<>();
    for (double n = 100; n <= 100_000; n *= 10) {
      xs.add(n);
    }
    Chart.FixedTicksAxis x = new Chart.FixedTicksAxis("ranks (N), log scale", xs, 10);
    CombinedDomainXYPlot plot = new CombinedDomainXYPlot(x);
    XYPlot time = panel(p, true, "seconds until every rank is ready (log)");
    plot.add(time, 1);
    plot.add(panel(p, false, "metadata operations (log)"), 1);
    plot.setFixedLegendItems(time.getLegendItems());
    plot.setGap(12);
    JFreeChart chart = new JFreeChart("Projected: " + (int) p.compileSeconds() + " s compile, "
        + (int) (p.binaryBytes() / 1024) + " KiB binary, " + (int) (p.bandwidth() / 1e9 * 8) + " Gb/s, "
        + (int) p.createsPerSecond() + " creates/s (mpi-build's time lies under naive's)", new Font("SansSerif", Font.BOLD, 14), plot, true);
    chart.setBackgroundPaint(Color.WHITE);
    ChartUtils.saveChartAsPNG(png.toFile(), chart, 900, 700);
  }

  static XYPlot panel(Params p, boolean seconds, String label) {
    XYSeriesCollection data = new XYSeriesCollection();
    double lo = Double.MAX_VALUE;
    double hi = 0;
    for (int s = 0; s < 4; s++) {
      XYSeries series = null;
      for (int k = 0; k <= 30; k++) { // 100 to 100,000, ten points a decade
        long n = Math.round(100 * Math.pow(10, k / 10.0));
        Projection x = all(p, n).get(s);
        if (series == null) {
          series = new XYSeries(x.strategy());
        }
        double v = Math.max(1, seconds ? x.seconds() : x.metadataOps());
        if (!seconds && x.metadataOps() == 0) {
          continue; // nothing on the shared file system: no point on a log axis
        }
        series.add(n, v);
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
      data.addSeries(series);
    }
    XYLineAndShapeRenderer r = new XYLineAndShapeRenderer(true, false);
    for (int i = 0; i < 4; i++) {
      r.setSeriesPaint(i, Chart.COLORS[i]);
      r.setSeriesStroke(i, new BasicStroke(2.5f));
    }
    XYPlot plot = new XYPlot(data, null, new Chart.FixedTicksAxis(label, Chart.roundTicks(lo, hi), 10), r);
    plot.setBackgroundPaint(Color.WHITE);
    plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
    plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
    return plot;
  }
}
