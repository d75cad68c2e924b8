package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ScaleModelTest {
  /** Round numbers: 10 s compile, 1 s ready, 1 MB binary, 1 us latency, 1 GB/s, 1 us per message. */
  static final ScaleModel.Params P = new ScaleModel.Params(10, 1, 1e6, 1e-6, 1e9, 1e-6, 1_000, 10_000, 1e9, 20, 0.5);

  @Test
  void aBroadcastTakesTheBetterOfABinomialTreeAndScatterAllgather() {
    assertEquals(0, ScaleModel.broadcastSeconds(P, 1));
    // 2 ranks: binomial 1 * (1 us + 1 ms) against (1 + 1) us + 2 * 1 ms * 1/2.
    assertEquals(1e-6 + 1e-3, ScaleModel.broadcastSeconds(P, 2), 1e-12);
    // 1024 ranks: binomial 10 * 1.001 ms; scatter-allgather 1033 us + 2 ms * 1023/1024.
    assertEquals(1033e-6 + 2e-3 * 1023 / 1024, ScaleModel.broadcastSeconds(P, 1024), 1e-12);
  }

  @Test
  void naiveCompilesEverywhereAndTouchesNothingShared() {
    ScaleModel.Projection x = ScaleModel.naive(P, 1000);
    assertEquals(11, x.seconds(), 1e-9);
    assertEquals(0, x.metadataOps());
    assertEquals(1000, x.compiles());
  }

  @Test
  void occa12PaysAMetadataBurstThatGrowsWithN() {
    ScaleModel.Projection x = ScaleModel.occa12(P, 1000);
    assertEquals(3000, x.metadataOps());
    assertEquals(10 + 1000 / 10_000.0 + 2000 / 1_000.0 + 1, x.seconds(), 1e-9);
  }

  @Test
  void theLockPollsForTheWholeCompileAndIsTakenOverPastTheStaleAge() {
    ScaleModel.Projection x = ScaleModel.lock(P, 100);
    // 10 s compile, under the 20 s stale age: 20 polls per rank, 4 more operations each, the owner's 4.
    assertEquals(100 * (1 + 1 + 20 + 2) + 4, x.metadataOps());
    assertEquals(1, x.compiles());
    ScaleModel.Params slow = new ScaleModel.Params(23, 1, 1e6, 1e-6, 1e9, 1e-6, 1_000, 10_000, 1e9, 20, 0.5);
    ScaleModel.Projection y = ScaleModel.lock(slow, 100);
    assertEquals(2, y.compiles());
    assertTrue(y.seconds() > 20 + 23, "a takeover costs the stale age and a second compile: " + y);
  }

  @Test
  void mpiBuildCompilesOnceAndItsSharedOperationsStayConstant() {
    ScaleModel.Projection small = ScaleModel.mpiBuild(P, 100);
    ScaleModel.Projection large = ScaleModel.mpiBuild(P, 100_000);
    assertEquals(1, large.compiles());
    assertEquals(small.metadataOps(), large.metadataOps());
    // From 100 to 10^5 ranks: 99,900 more arrivals, each received and answered, at 1 us (199.8 ms), a binomial broadcast 10 levels deeper
    // (17.0 ms against the 2.1 ms of scatter-allgather at 100), agreements 10 levels deeper (40 us).
    double grew = large.seconds() - small.seconds();
    assertEquals(0.1998 + (17 * 1.001e-3 - (106e-6 + 2e-3 * 99 / 100)) + 40e-6, grew, 1e-9);
  }
}
