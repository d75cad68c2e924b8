package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class ComparisonTest {
  @Test
  void aPublishedFigureTakesSevenRepetitionsOrMore() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Comparison.override(Comparison.QUICK, List.of("reps=6")));
    assertTrue(e.getMessage().contains("reps=6"), e.getMessage());
    assertEquals(7, Comparison.override(Comparison.QUICK, List.of("reps=7")).reps());
    assertTrue(Comparison.QUICK.reps() >= Comparison.MIN_REPS && Comparison.FULL.reps() >= Comparison.MIN_REPS);
  }

  @Test
  void eachJobRoundsUpToAMultipleOfItsOwnStrategies() {
    assertEquals(9, Comparison.jobReps(7, "cold")); // 3 strategies
    assertEquals(9, Comparison.jobReps(7, "occa"));
    assertEquals(8, Comparison.jobReps(7, "warm")); // 2
    assertEquals(12, Comparison.jobReps(12, "cold"));
    // never fewer cold repetitions than warm: warm repetition i reads the caches of cold repetition i
    for (int reps = 7; reps <= 30; reps++) {
      assertTrue(Comparison.jobReps(reps, "cold") >= Comparison.jobReps(reps, "warm"), "reps=" + reps);
      assertEquals(Comparison.jobReps(reps, "cold"), Comparison.jobReps(reps, "occa"), "reps=" + reps);
    }
  }

  @Test
  void occasSchemesNeverShareAJobWithMpiBuildsCompile() {
    // on PoCL before 6.0 mpi-build's compile sets a value that PoCL keeps for the process: OCCA's query would build it
    assertTrue(Bench.COLD.stream().noneMatch(Bench.OCCA::contains), Bench.COLD + " " + Bench.OCCA);
    assertTrue(Bench.COLD.contains("collective") && Bench.OCCA.containsAll(List.of("lock", "lock-long", "occa12")));
  }
}
