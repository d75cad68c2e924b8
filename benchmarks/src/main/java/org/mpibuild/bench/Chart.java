package org.mpibuild.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.geom.Rectangle2D;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.MathContext;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.AxisState;
import org.jfree.chart.axis.CategoryAxis;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.NumberTick;
import org.jfree.chart.axis.TickType;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.plot.CombinedDomainCategoryPlot;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.category.BarRenderer;
import org.jfree.chart.renderer.category.StackedBarRenderer;
import org.jfree.chart.renderer.category.StandardBarPainter;
import org.jfree.chart.renderer.xy.DeviationRenderer;
import org.jfree.chart.ui.RectangleEdge;
import org.jfree.chart.ui.TextAnchor;
import org.jfree.data.category.DefaultCategoryDataset;
import org.jfree.data.xy.YIntervalSeries;
import org.jfree.data.xy.YIntervalSeriesCollection;

/**
 * The benchmarks' charts. The main comparison's first: two panels sharing the x axis (ranks), time until ready and
 * CPU-seconds, each strategy's median as a line and its min-max as a band. Ticks only at the N that were
 * run, and at round values (1, 2, 5 x 10^k) on the log y axes.
 */
final class Chart {
  private Chart() {}

  static final Color[] COLORS = {new Color(0xd62728), new Color(0x1f77b4), new Color(0xff7f0e), new Color(0x2ca02c),
      new Color(0x7f7f7f), new Color(0x8c564b), new Color(0x9467bd), new Color(0xe377c2), new Color(0x17becf)};

  static void write(Comparison.Mode mode, List<Map<String, String>> cells, Map<String, Object> machine, Path png)
      throws IOException {
    List<Double> xs = new ArrayList<>();
    mode.ranks().forEach(n -> xs.add((double) n));
    FixedTicksAxis x = new FixedTicksAxis("ranks (N), log scale", xs, 2);
    CombinedDomainXYPlot plot = new CombinedDomainXYPlot(x);
    XYPlot time = panel(mode, cells, "ms", "ms until every rank is ready (log)", 1);
    plot.add(time, 3);
    plot.add(panel(mode, cells, "cpu_s", "CPU-seconds, all ranks (log)", 1e-3), 2);
    plot.setFixedLegendItems(time.getLegendItems()); // one legend for both panels
    plot.setGap(12);
    String title = "Time until every rank holds a ready kernel (" + mode.program() + ", PoCL, " + machine.get("cores")
        + " cores: " + machine.get("cpu") + ")";
    JFreeChart chart = new JFreeChart(title, new Font("SansSerif", Font.BOLD, 14), plot, true);
    chart.setBackgroundPaint(Color.WHITE);
    ChartUtils.saveChartAsPNG(png.toFile(), chart, 1000, 760);
  }

  /**
   * Where the time goes: one panel per N, one stacked bar per strategy, its segments the slowest rank's
   * phases (median ms of each phase over the repetitions) and "other" (that rank's time outside them).
   */
  static void writePhases(Comparison.Mode mode, List<Map<String, String>> cells, Map<String, Object> machine, Path png)
      throws IOException {
    CategoryAxis strategies = new CategoryAxis("strategy");
    strategies.setCategoryMargin(0.15);
    CombinedDomainCategoryPlot plot = new CombinedDomainCategoryPlot(strategies);
    List<String> phases = new ArrayList<>(Phases.NAMES);
    phases.add("other");
    for (int n : mode.ranks()) {
      DefaultCategoryDataset data = new DefaultCategoryDataset();
      for (String s : StrategyLabels.present(cells, mode.ranks())) {
        if (!CellQueries.has(cells, n, s, "phase_setup_ms")) {
          continue;
        }
        for (String p : phases) {
          data.addValue(Math.max(0, Stats.median(CellQueries.series(cells, n, s, "phase_" + p + "_ms"))), p,
              StrategyLabels.SHORT.getOrDefault(s, s));
        }
      }
      StackedBarRenderer r = bars(new StackedBarRenderer(), phases.size());
      NumberAxis ms = new NumberAxis("ms, N=" + n);
      CategoryPlot panel = new CategoryPlot(data, null, ms, r);
      panel.setBackgroundPaint(Color.WHITE);
      panel.setRangeGridlinePaint(Color.LIGHT_GRAY);
      plot.add(panel, 1);
    }
    plot.setGap(10);
    String title = "Where the time goes: the slowest rank's phases, median ms (" + mode.program() + ", PoCL, "
        + machine.get("cores") + " cores)";
    JFreeChart chart = new JFreeChart(title, new Font("SansSerif", Font.BOLD, 14), plot, true);
    chart.setBackgroundPaint(Color.WHITE);
    ChartUtils.saveChartAsPNG(png.toFile(), chart, 1000, 220 + 190 * mode.ranks().size());
  }

  /** {@code r} with flat bars, no shadow, and the first {@code series} colours of {@link #COLORS}. */
  static <R extends BarRenderer> R bars(R r, int series) {
    r.setBarPainter(new StandardBarPainter());
    r.setShadowVisible(false);
    for (int i = 0; i < series; i++) {
      r.setSeriesPaint(i, COLORS[i % COLORS.length]);
    }
    return r;
  }

  /**
   * The conjugate gradient benchmark ({@link CgBench}): two panels sharing the cells (ranks and grid), time per
   * iteration and host CPU per iteration, one bar per mode (and binding) at its median, on log axes.
   */
  static void writeCg(List<CgBench.Cell> cells, Map<String, Object> machine, Path png) throws IOException {
    CategoryAxis x = new CategoryAxis("ranks, grid per rank");
    x.setCategoryMargin(0.2);
    CombinedDomainCategoryPlot plot = new CombinedDomainCategoryPlot(x);
    CategoryPlot time = cgPanel(cells, "ms per iteration (log)", false);
    plot.add(time, 1);
    plot.add(cgPanel(cells, "host CPU ms per iteration (log)", true), 1);
    plot.setFixedLegendItems(time.getLegendItems()); // one legend for both panels
    plot.setGap(12);
    String title = "Conjugate gradients, stream-ordered against host-synchronized (manual): median of " + cells.get(0).pairs().size()
        + " paired repetitions (PoCL, " + machine.get("cores") + " cores)";
    JFreeChart chart = new JFreeChart(title, new Font("SansSerif", Font.BOLD, 14), plot, true);
    chart.setBackgroundPaint(Color.WHITE);
    ChartUtils.saveChartAsPNG(png.toFile(), chart, 1000, 700);
  }

  private static CategoryPlot cgPanel(List<CgBench.Cell> cells, String label, boolean cpu) {
    DefaultCategoryDataset data = new DefaultCategoryDataset();
    double lo = Double.MAX_VALUE;
    double hi = 0;
    for (CgBench.Cell c : cells) {
      String category = c.ranks() + " ranks, " + c.grid().side() + "×" + c.grid().side();
      for (String mode : List.of("ordered", "manual")) {
        boolean ordered = mode.equals("ordered");
        double v = Math.max(1e-3, Stats.median(c.of(p -> {
          CgBench.Solve s = ordered ? p.ordered() : p.manual();
          return cpu ? s.cpuMs() : s.ms();
        })));
        data.addValue(v, mode + " (" + c.binding() + ")", category);
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
    }
    FixedTicksAxis y = new FixedTicksAxis(label, roundTicks(lo, hi), 10);
    BarRenderer r = bars(new BarRenderer(), data.getRowCount());
    r.setBase(y.getLowerBound()); // bars rise from the axis' floor: a log axis has no 0
    r.setIncludeBaseInRange(false);
    CategoryPlot panel = new CategoryPlot(data, null, y, r);
    panel.setBackgroundPaint(Color.WHITE);
    panel.setRangeGridlinePaint(Color.LIGHT_GRAY);
    return panel;
  }

  static XYPlot panel(Comparison.Mode mode, List<Map<String, String>> cells, String field, String label, double floor) {
    YIntervalSeriesCollection data = new YIntervalSeriesCollection();
    double lo = Double.MAX_VALUE;
    double hi = 0;
    for (String strategy : StrategyLabels.present(cells, mode.ranks())) {
      YIntervalSeries series = new YIntervalSeries(StrategyLabels.LABELS.get(strategy));
      for (int n : mode.ranks()) {
        List<Double> v = CellQueries.series(cells, n, strategy, field);
        if (v.isEmpty()) {
          continue; // not measured at this N: a gap in its line
        }
        double min = Math.max(floor, Stats.min(v));
        double max = Math.max(floor, Stats.max(v));
        series.add(n, Math.max(floor, Stats.median(v)), min, max);
        lo = Math.min(lo, min);
        hi = Math.max(hi, max);
      }
      data.addSeries(series);
    }
    FixedTicksAxis y = new FixedTicksAxis(label, roundTicks(lo, hi), 10);
    XYPlot plot = new XYPlot(data, null, y, renderer());
    plot.setBackgroundPaint(Color.WHITE);
    plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
    plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
    return plot;
  }

  static DeviationRenderer renderer() {
    DeviationRenderer r = new DeviationRenderer(true, true);
    r.setAlpha(0.15f);
    for (int i = 0; i < COLORS.length; i++) {
      r.setSeriesPaint(i, COLORS[i]);
      r.setSeriesFillPaint(i, COLORS[i]);
      r.setSeriesStroke(i, new BasicStroke(2f));
    }
    return r;
  }

  /** 1, 2, 5 x 10^k, from the largest at or below {@code lo} to the first at or above {@code hi}. */
  static List<Double> roundTicks(double lo, double hi) {
    List<Double> out = new ArrayList<>();
    for (double decade = Math.pow(10, Math.floor(Math.log10(lo))); ; decade *= 10) {
      for (double m : new double[] {1, 2, 5}) {
        double t = m * decade;
        if (out.isEmpty() || t <= lo) {
          out.clear();
        }
        out.add(t);
        if (t >= hi) {
          return out;
        }
      }
    }
  }

  /** A log axis whose ticks are exactly the given values, labelled as plain numbers. */
  static final class FixedTicksAxis extends LogAxis {
    private final List<Double> ticks;

    FixedTicksAxis(String label, List<Double> ticks, double base) {
      super(label);
      this.ticks = ticks;
      setBase(base);
      setSmallestValue(ticks.get(0) / 2);
      setAutoRange(false);
      setRange(ticks.get(0) / 1.3, ticks.get(ticks.size() - 1) * 1.3);
    }

    @Override
    @SuppressWarnings({"rawtypes", "unchecked"})
    public List refreshTicks(Graphics2D g2, AxisState state, Rectangle2D dataArea, RectangleEdge edge) {
      boolean vertical = RectangleEdge.isLeftOrRight(edge);
      List out = new ArrayList();
      for (double t : ticks) {
        out.add(new NumberTick(TickType.MAJOR, t, label(t), vertical ? TextAnchor.CENTER_RIGHT : TextAnchor.TOP_CENTER,
            vertical ? TextAnchor.CENTER_RIGHT : TextAnchor.TOP_CENTER, 0));
      }
      return out;
    }

    static String label(double t) {
      if (t >= 1) {
        return String.format(Locale.ROOT, "%,.0f", t);
      }
      return new BigDecimal(t).round(new MathContext(1)).stripTrailingZeros().toPlainString();
    }
  }
}
