package org.mpibuild.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The sizes of a messenger's pinned blocks, without a GPU (allocating them needs one: {@code StreamIT}). */
class PinnedPoolTest {
  @Test
  void pinnedBlocksArePowersOfTwoOfAtLeast64BytesAndExactWhereRoundingWouldPass2GiB() {
    assertEquals(64, PinnedPool.blockBytes(1));
    assertEquals(64, PinnedPool.blockBytes(4));
    assertEquals(64, PinnedPool.blockBytes(64));
    assertEquals(128, PinnedPool.blockBytes(65));
    assertEquals(1 << 20, PinnedPool.blockBytes((1 << 20) - 3));
    assertEquals(1 << 30, PinnedPool.blockBytes(1 << 30));
    long big = (1L << 30) + 1; // rounding up would pass what one buffer can view
    assertEquals(big, PinnedPool.blockBytes(big));
  }
}
