package org.mpibuild.examples.cg;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.Path2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.imageio.ImageIO;

/**
 * The residual history of conjugate gradient solves as a PNG: the relative residual {@code ||r|| / ||r0||} on a
 * log scale against the iteration, one line per solve. Drawn with the JDK alone ({@code java.awt}, headless), so
 * that the example needs no chart library: the benchmarks' charts use JFreeChart, whose license (LGPL-2.1) allows
 * it in a program that is not distributed, and the examples are (the release's {@code lib/examples}).
 */
final class ResidualPlot {
  static final int WIDTH = 900;
  static final int HEIGHT = 540;
  static final int LEFT = 80;
  static final int RIGHT = 190;
  static final int TOP = 50;
  static final int BOTTOM = 60;
  static final Color[] COLORS = {new Color(0xd62728), new Color(0x1f77b4), new Color(0x2ca02c), new Color(0xff7f0e)};

  /**
   * One line: a solve's name and its relative residual at iterations 0, 1, ...
   *
   * @param label the legend's text
   * @param residuals the relative residual after each iteration (0: the start)
   */
  record Series(String label, double[] residuals) {}

  private ResidualPlot() {}

  /**
   * The relative residuals of an {@code r·r} history: {@code sqrt(rr[i] / rr[0])} ({@link Stopping#relative}).
   *
   * @param rr {@code r·r} at the start and after each iteration
   * @return the relative residual at each
   */
  static double[] relative(double[] rr) {
    double[] out = new double[rr.length];
    for (int i = 0; i < rr.length; i++) {
      out[i] = Stopping.relative(rr[i], rr[0]);
    }
    return out;
  }

  /**
   * The powers of ten that bound the positive values: from the largest at or below the smallest to the smallest at
   * or above the largest, at least two.
   *
   * @return the exponents, low and high
   */
  static int[] decades(List<Series> series) {
    double lo = Double.MAX_VALUE;
    double hi = 0;
    for (Series s : series) {
      for (double v : s.residuals()) {
        if (v > 0 && Double.isFinite(v)) {
          lo = Math.min(lo, v);
          hi = Math.max(hi, v);
        }
      }
    }
    if (hi == 0) {
      return new int[] {-1, 0};
    }
    int low = (int) Math.floor(Math.log10(lo));
    int high = (int) Math.ceil(Math.log10(hi));
    return new int[] {low, Math.max(high, low + 1)};
  }

  /** A step of 1, 2 or 5 × 10^k that cuts {@code 0..range} into at most {@code most} parts. */
  static int step(int range, int most) {
    for (int decade = 1; ; decade *= 10) {
      for (int m : new int[] {1, 2, 5}) {
        if ((long) m * decade * most >= range) {
          return m * decade;
        }
      }
    }
  }

  /** The pixel row of {@code value} on a log axis from {@code 10^low} (bottom) to {@code 10^high} (top). */
  static double y(double value, int[] decades) {
    double f = (Math.log10(value) - decades[0]) / (decades[1] - decades[0]);
    return TOP + (1 - f) * (HEIGHT - TOP - BOTTOM);
  }

  /** The pixel column of iteration {@code it} on an axis from 0 to {@code last}. */
  static double x(int it, int last) {
    return LEFT + (double) it / Math.max(1, last) * (WIDTH - LEFT - RIGHT);
  }

  /**
   * Draws the series and writes the PNG. Lines of later series are thinner and dashed, so that solves with the same
   * history (the modes compute the same numbers) stay visible on top of each other. A residual of 0 or less has no
   * place on a log axis: the line breaks there.
   *
   * @param title the title
   * @param series the solves
   * @param png the file to write
   * @throws IOException if the file cannot be written
   */
  static void write(String title, List<Series> series, Path png) throws IOException {
    if (System.getProperty("java.awt.headless") == null) {
      System.setProperty("java.awt.headless", "true");
    }
    int last = 1;
    for (Series s : series) {
      last = Math.max(last, s.residuals().length - 1);
    }
    int[] decades = decades(series);
    BufferedImage image = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = image.createGraphics();
    try {
      g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
      g.setColor(Color.WHITE);
      g.fillRect(0, 0, WIDTH, HEIGHT);
      g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
      axes(g, decades, last);
      for (int i = 0; i < series.size(); i++) {
        line(g, series.get(i), i, decades, last);
      }
      g.setColor(Color.BLACK);
      g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 14));
      g.drawString(title, LEFT, TOP - 20);
    } finally {
      g.dispose();
    }
    if (!ImageIO.write(image, "png", png.toFile())) {
      throw new IOException("no PNG writer in this JDK");
    }
  }

  private static void axes(Graphics2D g, int[] decades, int last) {
    int bottom = HEIGHT - BOTTOM;
    int right = WIDTH - RIGHT;
    for (int e = decades[0]; e <= decades[1]; e++) {
      int y = (int) Math.round(y(Math.pow(10, e), decades));
      g.setColor(Color.LIGHT_GRAY);
      g.drawLine(LEFT, y, right, y);
      g.setColor(Color.BLACK);
      String label = "1e" + e;
      g.drawString(label, LEFT - 8 - g.getFontMetrics().stringWidth(label), y + 4);
    }
    int step = step(last, 10);
    for (int it = 0; it <= last; it += step) {
      int x = (int) Math.round(x(it, last));
      g.setColor(Color.LIGHT_GRAY);
      g.drawLine(x, TOP, x, bottom);
      g.setColor(Color.BLACK);
      String label = Integer.toString(it);
      g.drawString(label, x - g.getFontMetrics().stringWidth(label) / 2, bottom + 18);
    }
    g.drawRect(LEFT, TOP, right - LEFT, bottom - TOP);
    g.drawString("iteration", (LEFT + right) / 2 - 25, HEIGHT - 15);
    Graphics2D turned = (Graphics2D) g.create();
    turned.rotate(-Math.PI / 2);
    turned.drawString("||r|| / ||r0|| (log)", -(TOP + bottom) / 2 - 50, 20);
    turned.dispose();
  }

  private static void line(Graphics2D g, Series s, int index, int[] decades, int last) {
    Color color = COLORS[index % COLORS.length];
    float width = Math.max(1.5f, 4.5f - 1.5f * index);
    g.setColor(color);
    g.setStroke(index == 0 ? new BasicStroke(width) : new BasicStroke(width, BasicStroke.CAP_BUTT,
        BasicStroke.JOIN_ROUND, 1, new float[] {8, 5}, 0));
    Path2D.Double path = new Path2D.Double();
    boolean drawing = false;
    double[] r = s.residuals();
    for (int it = 0; it < r.length; it++) {
      if (!(r[it] > 0) || !Double.isFinite(r[it])) {
        drawing = false;
        continue;
      }
      double x = x(it, last);
      double y = y(r[it], decades);
      if (drawing) {
        path.lineTo(x, y);
      } else {
        path.moveTo(x, y);
        drawing = true;
      }
    }
    g.draw(path);
    int ly = TOP + 20 + 22 * index;
    int lx = WIDTH - RIGHT + 15;
    g.drawLine(lx, ly, lx + 30, ly);
    g.setStroke(new BasicStroke(1));
    g.setColor(Color.BLACK);
    g.drawString(s.label(), lx + 38, ly + 4);
  }

  /** The legend's labels of solves in {@code modes}, in order: a mode run again is numbered ("manual, 2nd"). */
  static List<String> labels(List<String> modes) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < modes.size(); i++) {
      String mode = modes.get(i);
      long before = modes.subList(0, i).stream().filter(mode::equals).count();
      out.add(before == 0 ? mode : String.format(Locale.ROOT, "%s, run %d", mode, before + 1));
    }
    return out;
  }
}
