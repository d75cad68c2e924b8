package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class AllReduceBenchTest {
  private static String line(String mode, long bytes, double s, double host, double progress) {
    return String.format(java.util.Locale.ROOT, "RESULT mode=%s bytes=%d iterations=10 ranks=2 correct=true "
        + "seconds=%.6f host_cpu_seconds=%.6f progress_cpu_seconds=%.6f host_free_seconds=%.6f jit_seconds=0.001 "
        + "warmup_loops=2 warmup_quiet=true%n", mode, bytes, s, host, progress, s / 2);
  }

  @Test
  void parsesEveryResultAmongOtherOutput() {
    String out = "[1,0]<stdout>: noise\n" + line("ordered", 4096, 0.5, 0.01, 0.2) + "other\n"
        + line("manual", 4096, 0.6, 0.6, 0);
    List<AllReduceBench.Result> r = AllReduceBench.parse(out);
    assertEquals(2, r.size());
    assertEquals(new AllReduceBench.Result("ordered", 4096, 10, 0.5, 0.01, 0.2, 0.25, 0.001, 2, true), r.get(0));
    assertEquals("manual", r.get(1).mode());
  }

  @Test
  void aWrongSumFailsLoudly() {
    String out = line("ordered", 4096, 0.5, 0.01, 0.2).replace("correct=true", "correct=false");
    assertThrows(IllegalStateException.class, () -> AllReduceBench.parse(out));
  }

  @Test
  void pairsEachRepetitionsModesBySize() {
    List<List<AllReduceBench.Result>> reps = List.of(
        AllReduceBench.parse(line("ordered", 4096, 1, 0.1, 0.3) + line("manual", 4096, 2, 1, 0)
            + line("ordered", 1 << 24, 3, 0.2, 0.3) + line("manual", 1 << 24, 3, 2, 0)),
        // the second repetition: manual first
        AllReduceBench.parse(line("manual", 4096, 4, 1, 0) + line("ordered", 4096, 2, 0.05, 0.3)
            + line("manual", 1 << 24, 6, 4, 0) + line("ordered", 1 << 24, 3, 0.2, 0.3)));
    List<AllReduceBench.Row> rows = AllReduceBench.rows(reps);
    assertEquals(2, rows.size());
    assertEquals(4096, rows.get(0).bytes());
    assertEquals(List.of(0.5, 0.5), rows.get(0).totalRatio(), "per pair, not across repetitions");
    assertEquals(List.of(0.1, 0.05), rows.get(0).hostRatio());
    assertEquals(List.of(1.0, 0.5), rows.get(1).totalRatio());
    assertEquals(List.of(1.0, 2.0), rows.get(0).manualFree());
    String md = AllReduceBench.report(rows, 2, "on the device's queue", "mpijava");
    assertTrue(md.contains("bench: allreduce binding=mpijava ranks=2 reps=2 total_4KiB=0.50 host_4KiB=0.075 total_16MiB=0.75 "
        + "host_16MiB=0.075 goal_total_le_1.0=met goal_host_le_0.10=met"), md);
  }

  @Test
  void theHostTimeBeyondTheKernelLaunchesIsPairedWithTheKernelsOnlyLoopOfTheSameRepetition() {
    List<List<AllReduceBench.Result>> reps = List.of(
        AllReduceBench.parse(line("ordered", 4096, 1, 0.3, 0) + line("manual", 4096, 2, 1.2, 0)
            + line("kernels", 4096, 0.5, 0.2, 0)),
        AllReduceBench.parse(line("manual", 4096, 2, 2.1, 0) + line("ordered", 4096, 1, 0.4, 0)
            + line("kernels", 4096, 0.5, 0.1, 0)));
    AllReduceBench.Row row = AllReduceBench.rows(reps).get(0);
    assertEquals(List.of(0.2, 0.1), row.kernelsHost());
    assertEquals(0.1, row.beyondKernelsRatio().get(0), 1e-9, "(0.3 - 0.2) / (1.2 - 0.2)");
    assertEquals(0.15, row.beyondKernelsRatio().get(1), 1e-9, "(0.4 - 0.1) / (2.1 - 0.1)");
    String md = AllReduceBench.report(List.of(row), 2, "on the device's queue", "mpijava");
    assertTrue(md.contains(" host_beyond_kernels_4KiB=0.125 "), md);
    assertTrue(md.contains("Collectives ran on the device's queue."), md);
  }

  @Test
  void aGoalMissedAtOneSizeIsMissed() {
    List<List<AllReduceBench.Result>> reps = List.of(AllReduceBench.parse(line("ordered", 4096, 1.1, 0.5, 0)
        + line("manual", 4096, 1, 1, 0) + line("ordered", 65536, 0.5, 0.01, 0) + line("manual", 65536, 1, 1, 0)));
    String md = AllReduceBench.report(AllReduceBench.rows(reps), 1, "on the progress thread", "ffm");
    assertTrue(md.contains("goal_total_le_1.0=missed goal_host_le_0.10=missed"), md);
  }

  @Test
  void eachModesLoopsInARepetitionAreAveragedBeforeTheyArePaired() {
    // ordered, manual, manual, ordered in one job: the pair is mean(ordered) / mean(manual)
    List<List<AllReduceBench.Result>> reps = List.of(AllReduceBench.parse(line("ordered", 4096, 1, 0.1, 0.2)
        + line("manual", 4096, 2, 1, 0) + line("manual", 4096, 4, 3, 0) + line("ordered", 4096, 2, 0.3, 0.4)));
    AllReduceBench.Row row = AllReduceBench.rows(reps).get(0);
    assertEquals(List.of(1.5), row.orderedSeconds());
    assertEquals(List.of(3.0), row.manualSeconds());
    assertEquals(0.5, row.totalRatio().get(0), 1e-9, "(1 + 2) / 2 over (2 + 4) / 2");
    assertEquals(0.1, row.hostRatio().get(0), 1e-9, "(0.1 + 0.3) / 2 over (1 + 3) / 2");
    assertEquals(0.3, row.orderedProgress().get(0), 1e-9);
  }

  @Test
  void aRepetitionWithMoreLoopsOfOneModeThanTheOtherIsRefused() {
    List<List<AllReduceBench.Result>> reps = List.of(AllReduceBench.parse(line("ordered", 4096, 1, 0.1, 0)
        + line("manual", 4096, 2, 1, 0) + line("manual", 4096, 2, 1, 0)));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> AllReduceBench.rows(reps)).getMessage()
        .contains("1 ordered and 2 manual results"));
  }

  @Test
  void aWarmUpStoppedByItsCapIsCountedAndAnUnknownProgressTimeStaysUnknown() {
    String capped = line("manual", 4096, 2, 1, 0).replace("warmup_quiet=true", "warmup_quiet=false");
    String unknown = line("ordered", 4096, 1, 0.1, 0).replace("progress_cpu_seconds=0.000000",
        "progress_cpu_seconds=-1.000000");
    List<List<AllReduceBench.Result>> reps = List.of(AllReduceBench.parse(unknown + capped
        + line("manual", 4096, 2, 1, 0) + line("ordered", 4096, 1, 0.1, 0.2)));
    AllReduceBench.Row row = AllReduceBench.rows(reps).get(0);
    assertEquals(List.of(-1.0), row.orderedProgress(), "not the mean of -1 and 0.2");
    assertEquals(List.of(true, false), row.warmupQuiet(), "the manual loops: one stopped at the cap");
    assertTrue(AllReduceBench.report(List.of(row), 1, "on the queue", "ffm").contains("| 2-2, 1 not quiet |"));
  }

  @Test
  void loopsOfOneModeWithDifferentIterationCountsAreRefused() {
    String other = line("ordered", 4096, 1, 0.1, 0).replace("iterations=10", "iterations=20");
    List<List<AllReduceBench.Result>> reps = List.of(AllReduceBench.parse(line("ordered", 4096, 1, 0.1, 0)
        + line("manual", 4096, 2, 1, 0) + line("manual", 4096, 2, 1, 0) + other));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> AllReduceBench.rows(reps)).getMessage()
        .contains("ran 20 and 10 iterations"));
  }

  @Test
  void aRepetitionWithoutItsPairIsRefused() {
    List<List<AllReduceBench.Result>> reps = List.of(AllReduceBench.parse(line("ordered", 4096, 1, 0.1, 0)));
    assertThrows(IllegalArgumentException.class, () -> AllReduceBench.rows(reps));
  }

  @Test
  void sizesInWholeUnits() {
    assertEquals("4KiB", AllReduceBench.size(4096));
    assertEquals("16MiB", AllReduceBench.size(16 << 20));
    assertEquals("1536KiB", AllReduceBench.size(1536 * 1024));
    assertEquals("100B", AllReduceBench.size(100));
  }

  @Test
  void cellsShowTheRangeBelowSixValuesAndTheIntervalFromSix() {
    assertEquals("2.00 [1.00-3.00]", AllReduceBench.cell(List.of(3.0, 1.0, 2.0), 2));
    assertEquals("3.5 [1.0-6.0]", AllReduceBench.cell(List.of(1.0, 2.0, 3.0, 4.0, 5.0, 6.0), 1));
  }

  @Test
  void theCallbackCostIsTheMedianOfThePairedDifferences() {
    String out = "noise\nCALLBACK rep=0 plain_us=3.00 callback_us=100.00\nCALLBACK rep=1 plain_us=5.00 callback_us=60.00\n"
        + "CALLBACK rep=2 plain_us=4.00 callback_us=90.00\n";
    List<AllReduceBench.CallbackCost> costs = AllReduceBench.parseCallbackCosts(out);
    assertEquals(List.of(new AllReduceBench.CallbackCost(3, 100), new AllReduceBench.CallbackCost(5, 60),
        new AllReduceBench.CallbackCost(4, 90)), costs);
    String report = AllReduceBench.callbackReport(costs);
    // differences 97, 55, 86: the median is 86, not 90 - 4
    assertTrue(report.contains("bench: allreduce_callback reps=3 plain_us=4.00 callback_us=90.00 added_us=86.00"),
        report);
  }
}
