package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** What the all-reduce benchmark reads from {@code allreduce_kinds.c} and reports: each kind of call's time. */
class AllReduceKindsTest {
  @Test
  void theMpiKindsArePairedPerRepetitionAgainstTheBlockingCall() {
    String out = "noise\n"
        + "KINDS bytes=4096 rep=1 kind=blocking iterations=10 seconds=0.002000\n"
        + "KINDS bytes=4096 rep=1 kind=nonblocking iterations=10 seconds=0.006000\n"
        + "KINDS bytes=4096 rep=1 kind=persistent iterations=10 seconds=0.005000\n"
        + "KINDS bytes=4096 rep=2 kind=nonblocking iterations=10 seconds=0.004000\n"
        + "KINDS bytes=4096 rep=2 kind=persistent iterations=10 seconds=0.008000\n"
        + "KINDS bytes=4096 rep=2 kind=blocking iterations=10 seconds=0.004000\n"
        + "KINDS bytes=4096 rep=3 kind=persistent iterations=10 seconds=0.009000\n"
        + "KINDS bytes=4096 rep=3 kind=blocking iterations=10 seconds=0.003000\n"
        + "KINDS bytes=4096 rep=3 kind=nonblocking iterations=10 seconds=0.015000\n";
    List<AllReduceKinds.KindTime> kinds = AllReduceKinds.parseKinds(out);
    assertEquals(9, kinds.size());
    assertEquals(new AllReduceKinds.KindTime(4096, 2, "persistent", 10, 0.008), kinds.get(4));
    String report = AllReduceKinds.kindsReport(kinds);
    // per repetition: non-blocking 3, 1, 5 (median 3; the ratio of medians, 0.006 / 0.003, would be 2);
    // persistent 2.5, 2, 3
    assertTrue(report.contains("bench: allreduce_mpi_kinds ranks=2 nonblocking_4KiB=3.00 persistent_4KiB=2.50 reps=3"),
        report);
    assertTrue(report.contains("| 4KiB | 10 | 0.0030 [0.0020-0.0040] | 3.00 [1.00-5.00] | 2.50 [2.00-3.00] |"), report);
  }

  @Test
  void anMpiWithoutPersistentCollectivesSaysSoAndARepetitionWithoutBothCallsIsRefused() {
    String report = AllReduceKinds.kindsReport(AllReduceKinds.parseKinds(
        "KINDS bytes=1048576 rep=1 kind=blocking iterations=5 seconds=0.010000\n"
            + "KINDS bytes=1048576 rep=1 kind=nonblocking iterations=5 seconds=0.015000\n"));
    assertTrue(report.contains("| 1MiB | 5 | 0.0100 [0.0100-0.0100] | 1.50 [1.50-1.50] | none"), report);
    assertTrue(report.contains("bench: allreduce_mpi_kinds ranks=2 nonblocking_1MiB=1.50 reps=1"), report);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> AllReduceKinds.kindsReport(
        AllReduceKinds.parseKinds("KINDS bytes=64 rep=1 kind=blocking iterations=5 seconds=0.010000\n")));
    assertTrue(e.getMessage().contains("64 bytes"), e.getMessage());
  }

  @Test
  void theMpiKindsArePairedByRepetitionNumberNotByLineOrder() {
    // repetition 2's blocking time comes last: paired by line order, 0.004 / 0.002 would give a ratio of 2
    String report = AllReduceKinds.kindsReport(AllReduceKinds.parseKinds(
        "KINDS bytes=4096 rep=1 kind=nonblocking iterations=10 seconds=0.006000\n"
            + "KINDS bytes=4096 rep=2 kind=nonblocking iterations=10 seconds=0.004000\n"
            + "KINDS bytes=4096 rep=1 kind=blocking iterations=10 seconds=0.002000\n"
            + "KINDS bytes=65536 rep=1 kind=blocking iterations=5 seconds=0.010000\n"
            + "KINDS bytes=65536 rep=1 kind=nonblocking iterations=5 seconds=0.020000\n"
            + "KINDS bytes=4096 rep=2 kind=blocking iterations=10 seconds=0.001000\n"));
    // 4 KiB: ratios 3 (0.006 / 0.002) and 4 (0.004 / 0.001); 64 KiB, on its own line: 2
    assertTrue(report.contains("| 4KiB | 10 | 0.0015 [0.0010-0.0020] | 3.50 [3.00-4.00] | none"), report);
    assertTrue(report.contains("| 64KiB | 5 | 0.0100 [0.0100-0.0100] | 2.00 [2.00-2.00] | none"), report);
  }

  @Test
  void inconsistentMpiKindsAreRefused() {
    String both = "KINDS bytes=4096 rep=1 kind=blocking iterations=10 seconds=0.002000\n"
        + "KINDS bytes=4096 rep=1 kind=nonblocking iterations=10 seconds=0.004000\n"
        + "KINDS bytes=4096 rep=2 kind=blocking iterations=10 seconds=0.002000\n"
        + "KINDS bytes=4096 rep=2 kind=nonblocking iterations=10 seconds=0.004000\n";
    String partlyPersistent = both + "KINDS bytes=4096 rep=1 kind=persistent iterations=10 seconds=0.003000\n";
    assertTrue(assertThrows(IllegalArgumentException.class, () -> AllReduceKinds.kindsReport(
        AllReduceKinds.parseKinds(partlyPersistent))).getMessage().contains("persistent time in 1 of 2"));
    String twice = both + "KINDS bytes=4096 rep=2 kind=blocking iterations=10 seconds=0.009000\n";
    assertTrue(assertThrows(IllegalArgumentException.class, () -> AllReduceKinds.kindsReport(
        AllReduceKinds.parseKinds(twice))).getMessage().contains("two blocking times"));
    String otherIterations = both.replace("rep=2 kind=nonblocking iterations=10",
        "rep=2 kind=nonblocking iterations=20");
    assertTrue(assertThrows(IllegalArgumentException.class, () -> AllReduceKinds.kindsReport(
        AllReduceKinds.parseKinds(otherIterations))).getMessage().contains("20 iterations of nonblocking"));
  }
}
