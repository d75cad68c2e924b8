package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the CG benchmark reads from {@code Cg}'s lines, how it pairs the modes, and how it judges the goals. */
class CgBenchTest {
  static final CgBench.Grid SMALL = new CgBench.Grid("small", 64, 2000, 301);
  static final CgBench.Grid LARGE = new CgBench.Grid("large", 512, 1000, 41);

  private static String cg(String mode, double ms, double host, double helper) {
    return "CG mode=" + mode + " ranks=2 grid=64x128 iterations=301 residual=2.7e-08 error=2.3e-05 ms_per_iteration="
        + ms + " host_cpu_ms_per_iteration=" + host + " helper_cpu_ms_per_iteration=" + helper + " converged=false run="
        + (mode.equals("ordered") ? "on the device's queue (native kernels through the FFM API)" : "host") + "\n";
  }

  @Test
  void aJobsSolvesAreReadInOrderWithWhereTheyRan() {
    String job = "CG-FIRST build=collective ranks=2 first_iteration_ms=900.0 build_ms=800.0\n"
        + cg("ordered", 1.25, 0.1, 0.05) + "noise\n" + cg("manual", 0.5, 0.25, 0);
    List<CgBench.Solve> s = CgBench.solves(job);
    assertEquals(2, s.size());
    assertEquals(new CgBench.Solve("ordered", 2, 1.25, 0.1, 0.05,
        "on the device's queue (native kernels through the FFM API)"), s.get(0));
    assertEquals(new CgBench.Solve("manual", 2, 0.5, 0.25, 0, "host"), s.get(1));
    assertEquals(0.15, s.get(0).cpuMs(), 1e-12, "the messenger's threads count as host CPU");
  }

  @Test
  void theFirstIterationLineMustNameTheBuildAsked() {
    String job = "CG-FIRST build=each-rank ranks=4 first_iteration_ms=5200.5 build_ms=5100.0\n";
    assertArrayEquals(new double[] {5200.5, 5100.0}, CgBench.first(job, "each-rank"));
    assertThrows(IllegalStateException.class, () -> CgBench.first(job, "collective"));
    assertThrows(IllegalStateException.class, () -> CgBench.first("CG mode=ordered\n", "each-rank"));
  }

  @Test
  void repetitionsAlternateWhichModeGoesFirst() {
    assertEquals("ordered,manual,manual,ordered", CgBench.modes(0));
    assertEquals("manual,ordered,ordered,manual", CgBench.modes(1));
    assertEquals(CgBench.modes(0), CgBench.modes(2));
  }

  @Test
  void aRepetitionPairsTheMeansOfEachModesSolves() {
    CgBench.Pair p = CgBench.pair(CgBench.solves(cg("ordered", 1, 0.1, 0.1) + cg("manual", 2, 1, 0)
        + cg("manual", 4, 3, 0) + cg("ordered", 2, 0.3, 0.1)));
    assertEquals(1.5, p.ordered().ms(), 1e-12);
    assertEquals(3, p.manual().ms(), 1e-12, "both manual solves, not the first");
    assertEquals(0.5, p.time(), 1e-12);
    assertEquals(0.3 / 2, p.cpu(), 1e-12);
    assertEquals(0.2 / 2, p.hostThread(), 1e-12);
  }

  @Test
  void aRepetitionWithoutAsManySolvesOfEachModeIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> CgBench.pair(CgBench.solves(cg("ordered", 1, 0.1, 0)
        + cg("manual", 2, 1, 0) + cg("manual", 2, 1, 0))));
    assertThrows(IllegalArgumentException.class, () -> CgBench.pair(List.of()));
  }

  /** A cell whose repetitions have ordered/manual time ratios {@code time} and CPU ratios {@code cpu}. */
  static CgBench.Cell cell(String binding, int ranks, CgBench.Grid grid, double time, double cpu) {
    List<CgBench.Pair> pairs = new ArrayList<>();
    for (int rep = 0; rep < 7; rep++) {
      double manual = 1 + 0.01 * rep;
      pairs.add(new CgBench.Pair(new CgBench.Solve("ordered", ranks, time * manual, cpu * manual * 0.5,
          cpu * manual * 0.5, "queue"), new CgBench.Solve("manual", ranks, manual, manual, 0, "host")));
    }
    return new CgBench.Cell(binding, ranks, grid, pairs);
  }

  @Test
  void theGoalsAreJudgedOnTheMainBindingsMedians() {
    List<CgBench.Cell> cells = List.of(cell("ffm", 2, SMALL, 0.7, 0.05), cell("ffm", 2, LARGE, 1.1, 0.2),
        cell("ffm", 4, SMALL, 0.9, 0.05), cell("ffm", 4, LARGE, 1.0, 0.05), cell("mpijava", 2, SMALL, 2.0, 2.0));
    CgBench.First first = new CgBench.First(4, List.of(3.0, 3.0, 3.0, 3.0, 3.0, 3.0),
        List.of(6.0, 6.0, 6.0, 6.0, 6.0, 1.0), List.of(1.0, 1.0, 1.0, 1.0, 1.0, 1.0),
        List.of(2.0, 2.0, 2.0, 2.0, 2.0, 2.0));
    Map<String, Object> figures = CgBench.figures(cells, first);
    String line = CgBench.line(figures, 7, List.of(SMALL, LARGE));
    assertTrue(line.startsWith("bench: cg binding=ffm reps=7 small_per_rank=64x64 large_per_rank=512x512 "), line);
    assertTrue(line.contains(" time_small_n2=0.7[0.7-0.7] "), line);
    assertTrue(line.contains(" goal_time_small_n2_le_0.75=met:0.7["), line);
    assertTrue(line.contains(" goal_time_large_n2_le_1.0=missed:1.1["), line);
    assertTrue(!line.contains("goal_time_small_n4"), "the time goals are at 2 ranks: " + line);
    assertTrue(line.contains(" goal_host_cpu_small_n2_le_0.10=met:0.05["), line);
    assertTrue(line.contains(" goal_host_cpu_large_n2_le_0.10=missed:0.2["), line);
    assertTrue(line.contains(" goal_host_cpu_large_n4_le_0.10=met:"), line);
    assertTrue(line.contains(" goal_first_iteration_collective_over_each_rank_n4_le_1.0=met:0.5[0.5-3.0]"), line);
    assertTrue(!line.contains("2.0["), "mpi.jar's cell is reported, not judged: " + line);
    String md = CgBench.report(cells, first, line, 7);
    assertTrue(md.contains("| 2 | 64×64 per rank (64×128) | 300 | "), md);
    assertTrue(md.contains("mpi.jar binding"), md);
    assertTrue(md.endsWith(line + "\n"), md);
  }

  @Test
  void withoutFirstIterationPairsItsGoalIsLeftOut() {
    Map<String, Object> figures = CgBench.figures(List.of(cell("ffm", 2, SMALL, 0.5, 0.05)), null);
    String line = CgBench.line(figures, 7, List.of(SMALL));
    assertTrue(!line.contains("first_iteration"), line);
    assertTrue(line.contains("goal_time_small_n2_le_0.75=met"), line);
  }

  @Test
  void aGridRunsItsRowsPerRankTimesTheRanks() {
    assertEquals(List.of("--n", "64", "--ny", "256", "--tol", "0", "--max-iterations", "301", "--warmup", "2000"),
        SMALL.args(4));
    assertEquals(List.of(SMALL, LARGE), CgBench.grids(64, 512));
  }

  @Test
  void anUnknownBindingIsNamed() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CgBench.label("mpich"));
    assertTrue(e.getMessage().contains("'mpich'"), e.getMessage());
  }

  @Test
  void drawsTheChart(@TempDir Path dir) throws Exception {
    System.setProperty("java.awt.headless", "true");
    Path png = dir.resolve("cg.png");
    Chart.writeCg(List.of(cell("ffm", 2, SMALL, 0.7, 0.05), cell("ffm", 2, LARGE, 1.1, 0.2)),
        Map.of("cores", 2), png);
    assertTrue(Files.size(png) > 1000);
  }
}
