package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class PhasesTest {
  /** One rank's gathered values: time, then setup, compile, codegen, wait, broadcast, load, launch, receiver. */
  static long[] rank(long time, long setup, long compile, long wait, long bcast, long load, long launch, boolean recv) {
    return new long[] {time, setup, compile, 0, wait, bcast, load, launch, recv ? 1 : 0};
  }

  static long[] concat(long[]... ranks) {
    long[] out = new long[ranks.length * Phases.WIDTH];
    for (int r = 0; r < ranks.length; r++) {
      System.arraycopy(ranks[r], 0, out, r * Phases.WIDTH, Phases.WIDTH);
    }
    return out;
  }

  @Test
  void theSlowestRanksPhasesAndItsUnaccountedTime() {
    long[] all = concat(rank(100, 5, 80, 0, 2, 0, 10, false), rank(130, 5, 0, 85, 3, 7, 20, true),
        rank(120, 5, 0, 85, 3, 9, 12, true));
    Phases.Slowest s = Phases.slowest(all);
    assertEquals(1, s.slowestRank());
    assertArrayEquals(new long[] {5, 0, 0, 85, 3, 7, 20, 10}, s.nanos(), "other = 130 - 120");
    assertEquals(27, s.receiverReadyNanos(), "the slowest receiver's load + launch: rank 1's 7 + 20");
  }

  @Test
  void noReceiverGivesMinusOne() {
    Phases.Slowest s = Phases.slowest(concat(rank(50, 1, 40, 0, 0, 0, 9, false)));
    assertEquals(-1, s.receiverReadyNanos());
    assertEquals(0, s.nanos()[Phases.COUNT]);
    assertThrows(IllegalArgumentException.class, () -> Phases.slowest(new long[Phases.WIDTH + 1]));
  }

  @Test
  void namesFollowTheIndexes() {
    assertEquals(List.of("setup", "compile", "codegen", "wait", "broadcast", "load", "launch"), Phases.NAMES);
    assertEquals("launch", Phases.NAMES.get(Phases.LAUNCH));
    assertEquals("codegen", Phases.NAMES.get(Phases.CODEGEN));
  }
}
