package org.mpibuild.examples.cg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class RowBlocksTest {
  /** Every split of up to 40 rows over up to 9 ranks: contiguous, covering, in order, sizes within one row. */
  @Test
  void everyRowBelongsToExactlyOneRankAndBlocksDifferByOneRowAtMost() {
    for (int ranks = 1; ranks <= 9; ranks++) {
      for (int rows = ranks; rows <= 40; rows++) {
        RowBlocks b = new RowBlocks(rows, ranks);
        int next = 0;
        int min = Integer.MAX_VALUE;
        int max = 0;
        for (int r = 0; r < ranks; r++) {
          assertEquals(next, b.first(r), rows + " rows, " + ranks + " ranks, rank " + r);
          assertTrue(b.count(r) >= 1);
          next += b.count(r);
          min = Math.min(min, b.count(r));
          max = Math.max(max, b.count(r));
        }
        assertEquals(rows, next, rows + " rows, " + ranks + " ranks");
        assertTrue(max - min <= 1, rows + " rows, " + ranks + " ranks: " + min + " to " + max);
      }
    }
  }

  @Test
  void anOddSplitGivesTheFirstRanksTheExtraRows() {
    RowBlocks b = new RowBlocks(10, 4);
    assertEquals(3, b.count(0));
    assertEquals(3, b.count(1));
    assertEquals(2, b.count(2));
    assertEquals(2, b.count(3));
    assertEquals(8, b.first(3));
  }

  @Test
  void fewerRowsThanRanksOrNoRanksAreRefused() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new RowBlocks(3, 4));
    assertTrue(e.getMessage().contains("3 rows") && e.getMessage().contains("4 ranks"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new RowBlocks(3, 0));
  }
}
