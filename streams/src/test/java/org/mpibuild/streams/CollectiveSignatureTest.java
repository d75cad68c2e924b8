package org.mpibuild.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

class CollectiveSignatureTest {
  /** The element-wise maximum of the ranks' checks, as MPI's all-reduce MAX gives it. */
  private static ByteBuffer maxOfChecks(List<CollectiveSignature> ranks, long[] status) {
    ByteBuffer out = ByteBuffer.allocate(8 * CollectiveSignature.CHECK_LONGS);
    for (int i = 0; i < CollectiveSignature.CHECK_LONGS; i++) {
      out.putLong(8 * i, Long.MIN_VALUE);
    }
    for (int r = 0; r < ranks.size(); r++) {
      ByteBuffer mine = ByteBuffer.allocate(8 * CollectiveSignature.CHECK_LONGS);
      ranks.get(r).writeCheck(mine, status[r]);
      for (int i = 0; i < CollectiveSignature.CHECK_LONGS; i++) {
        out.putLong(8 * i, Math.max(out.getLong(8 * i), mine.getLong(8 * i)));
      }
    }
    return out;
  }

  private static ByteBuffer maxOfNames(List<CollectiveSignature> ranks) {
    int longs = CollectiveSignature.namesLongs(ranks.size());
    ByteBuffer out = ByteBuffer.allocate(8 * longs);
    for (int i = 0; i < longs; i++) {
      out.putLong(8 * i, Long.MIN_VALUE);
    }
    for (int r = 0; r < ranks.size(); r++) {
      ByteBuffer mine = ByteBuffer.allocate(8 * longs);
      ranks.get(r).writeNames(mine, r, ranks.size());
      for (int i = 0; i < longs; i++) {
        out.putLong(8 * i, Math.max(out.getLong(8 * i), mine.getLong(8 * i)));
      }
    }
    return out;
  }

  @Test
  void theSameCollectiveEverywhereAgreesAndCarriesTheHighestStatus() {
    CollectiveSignature s = CollectiveSignature.allReduce(1024, Datatype.DOUBLE, ReduceOp.SUM);
    ByteBuffer in = maxOfChecks(List.of(s, s, s), new long[] {0, (3L << 32) | 5, 0});
    assertTrue(CollectiveSignature.agreed(in));
    assertEquals((3L << 32) | 5, CollectiveSignature.status(in));
  }

  @Test
  void anyFieldThatDiffersOnAnyRankIsSeenAndNamed() {
    CollectiveSignature zero = CollectiveSignature.allReduce(8, Datatype.INT, ReduceOp.SUM);
    List<CollectiveSignature> others = List.of(CollectiveSignature.allReduce(9, Datatype.INT, ReduceOp.SUM),
        CollectiveSignature.allReduce(8, Datatype.FLOAT, ReduceOp.SUM),
        CollectiveSignature.allReduce(8, Datatype.INT, ReduceOp.MIN),
        CollectiveSignature.broadcast(32, 0));
    List<String> named = List.of("rank 1 differs in count (9)", "rank 1 differs in datatype (FLOAT)",
        "rank 1 differs in reduction (MIN)", "rank 1 differs in kind (a broadcast)");
    for (int i = 0; i < others.size(); i++) {
      List<CollectiveSignature> ranks = List.of(zero, others.get(i), zero);
      assertFalse(CollectiveSignature.agreed(maxOfChecks(ranks, new long[3])), named.get(i));
      String message = CollectiveSignature.mismatch(maxOfNames(ranks), 3, 7);
      assertEquals("collective #7 failed: the ranks called different collectives; rank 0 called an all-reduce (SUM of "
          + "8 INT); " + named.get(i) + ". Nothing was sent: every rank's buffer keeps its values", message);
    }
  }

  @Test
  void broadcastsDifferInRootAndSize() {
    CollectiveSignature zero = CollectiveSignature.broadcast(64, 0);
    List<CollectiveSignature> ranks = List.of(zero, CollectiveSignature.broadcast(32, 1));
    assertFalse(CollectiveSignature.agreed(maxOfChecks(ranks, new long[2])));
    assertEquals("collective #0 failed: the ranks called different collectives; rank 0 called a broadcast of 64 bytes "
        + "from rank 0; rank 1 differs in size (32 bytes), root (1). Nothing was sent: every rank's buffer keeps its "
        + "values", CollectiveSignature.mismatch(maxOfNames(ranks), 2, 0));
  }
}
