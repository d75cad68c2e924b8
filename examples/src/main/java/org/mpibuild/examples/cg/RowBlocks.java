package org.mpibuild.examples.cg;

/**
 * The grid's rows split across ranks in contiguous blocks: the first {@code rows % ranks} ranks hold one row
 * more than the others, so an odd split differs by one row at most and every rank holds at least one.
 *
 * @param rows the grid's rows
 * @param ranks the number of ranks
 */
public record RowBlocks(int rows, int ranks) {
  /**
   * Checks the split.
   *
   * @throws IllegalArgumentException if {@code ranks} is below 1, or there are fewer rows than ranks
   */
  public RowBlocks {
    if (ranks < 1) {
      throw new IllegalArgumentException("ranks " + ranks + " must be 1 or more");
    }
    if (rows < ranks) {
      throw new IllegalArgumentException("a grid of " + rows + " rows cannot give each of " + ranks
          + " ranks a row; use a larger grid or fewer ranks");
    }
  }

  /** @return how many rows {@code rank} holds */
  public int count(int rank) {
    return rows / ranks + (rank < rows % ranks ? 1 : 0);
  }

  /** @return the index of {@code rank}'s first row */
  public int first(int rank) {
    return rank * (rows / ranks) + Math.min(rank, rows % ranks);
  }
}
