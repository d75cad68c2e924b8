package org.mpibuild.examples.cg;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.Color;
import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The residual plot: its log axis, its ticks, and lines where the values put them in the PNG. */
class ResidualPlotTest {
  @Test
  void relativeResidualsComeFromTheRrHistory() {
    assertArrayEquals(new double[] {1, 0.5, 0.01}, ResidualPlot.relative(new double[] {4, 1, 4e-4}), 1e-15);
  }

  @Test
  void theLogAxisSpansWholeDecadesAroundThePositiveValues() {
    List<ResidualPlot.Series> s = List.of(new ResidualPlot.Series("a", new double[] {1, 0.3, 2e-9, 0}),
        new ResidualPlot.Series("b", new double[] {1.5, Double.NaN}));
    assertArrayEquals(new int[] {-9, 1}, ResidualPlot.decades(s), "0 and NaN have no place on a log axis");
    assertArrayEquals(new int[] {0, 1}, ResidualPlot.decades(List.of(new ResidualPlot.Series("c", new double[] {1}))),
        "at least one decade");
    int[] d = {-8, 0};
    assertEquals(ResidualPlot.TOP, ResidualPlot.y(1, d), 1e-9);
    assertEquals(ResidualPlot.HEIGHT - ResidualPlot.BOTTOM, ResidualPlot.y(1e-8, d), 1e-9);
    assertEquals((ResidualPlot.y(1, d) + ResidualPlot.y(1e-8, d)) / 2, ResidualPlot.y(1e-4, d), 1e-9);
  }

  @Test
  void iterationTicksAreOneTwoOrFiveTimesAPowerOfTen() {
    assertEquals(1, ResidualPlot.step(7, 10));
    assertEquals(2, ResidualPlot.step(11, 10));
    assertEquals(50, ResidualPlot.step(300, 10));
    assertEquals(100, ResidualPlot.step(1000, 10));
    assertEquals(200, ResidualPlot.step(1001, 10));
  }

  @Test
  void aModeRunAgainIsNumberedInTheLegend() {
    assertEquals(List.of("ordered", "manual", "manual, run 2", "ordered, run 2"),
        ResidualPlot.labels(List.of("ordered", "manual", "manual", "ordered")));
  }

  @Test
  void eachLineIsDrawnWhereItsValuesAre(@TempDir Path dir) throws Exception {
    Path png = dir.resolve("r.png");
    // the first falls from 1 to 1e-4 over 4 iterations; the second stays at 1e-2
    ResidualPlot.write("test", List.of(new ResidualPlot.Series("falls", new double[] {1, 1e-1, 1e-2, 1e-3, 1e-4}),
        new ResidualPlot.Series("flat", new double[] {1e-2, 1e-2, 1e-2, 1e-2, 1e-2})), png);
    BufferedImage image = ImageIO.read(png.toFile());
    assertEquals(ResidualPlot.WIDTH, image.getWidth());
    assertEquals(ResidualPlot.HEIGHT, image.getHeight());
    int[] d = {-4, 0};
    Color first = ResidualPlot.COLORS[0];
    Color second = ResidualPlot.COLORS[1];
    // the first line at iteration 2 (1e-2), the middle of the plot; not at iteration 2's top corner
    assertTrue(near(image, ResidualPlot.x(2, 4), ResidualPlot.y(1e-2, d), first), "the falling line at 2, 1e-2");
    assertFalse(near(image, ResidualPlot.x(2, 4), ResidualPlot.y(1, d) + 3, first), "nothing at 2, 1");
    // the flat line at 1e-2 at iteration 3, where the first line is at 1e-3
    assertTrue(near(image, ResidualPlot.x(3, 4) + 10, ResidualPlot.y(1e-2, d), second), "the flat line at 3, 1e-2");
    assertTrue(near(image, ResidualPlot.x(3, 4), ResidualPlot.y(1e-3, d), first), "the falling line at 3, 1e-3");
  }

  /** Whether a pixel within 3 of (x, y) is about {@code color}. */
  private static boolean near(BufferedImage image, double x, double y, Color color) {
    for (int dx = -3; dx <= 3; dx++) {
      for (int dy = -3; dy <= 3; dy++) {
        Color c = new Color(image.getRGB((int) Math.round(x) + dx, (int) Math.round(y) + dy));
        if (Math.abs(c.getRed() - color.getRed()) + Math.abs(c.getGreen() - color.getGreen())
            + Math.abs(c.getBlue() - color.getBlue()) < 60) {
          return true;
        }
      }
    }
    return false;
  }
}
