package org.mpibuild.internal.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;

class LogContextTest {
  /** The core's tests find MdcTestProvider through src/test/providers; a runner without it has no MDC at all. */
  @BeforeEach
  void anMdcThatKeepsValues() {
    boolean kept = MDC.getMDCAdapter() instanceof org.slf4j.helpers.BasicMDCAdapter;
    if (!kept) {
      System.out.println("SKIP no SLF4J MDC that keeps values on this class path (src/test/providers is missing)");
    }
    Assumptions.assumeTrue(kept, "no SLF4J MDC that keeps values on this class path (src/test/providers is missing)");
  }

  @Test
  void aCallIsMarkedWithItsRankUntilItEnds() {
    try (LogContext outer = LogContext.rank(3)) {
      try (LogContext inner = LogContext.rank(5)) {
        assertEquals("5", MDC.get(LogContext.RANK_KEY));
      }
      assertEquals("3", MDC.get(LogContext.RANK_KEY));
    }
    assertNull(MDC.get(LogContext.RANK_KEY));
  }

  /** A task run on a worker (a compile, a cache write) logs with its caller's rank; the worker keeps its own MDC. */
  @Test
  void aTaskCarriedToAnotherThreadLogsWithTheCallersRank() throws Exception {
    ExecutorService worker = Executors.newSingleThreadExecutor();
    try {
      worker.submit(() -> MDC.put("worker", "own")).get();
      String seen;
      try (LogContext rank = LogContext.rank(7)) {
        seen = worker.submit(LogContext.carried(() -> MDC.get(LogContext.RANK_KEY) + "/" + MDC.get("worker"))).get();
      }
      assertEquals("7/null", seen, "the caller's MDC, not the worker's");
      assertEquals("null/own", worker.submit(() -> MDC.get(LogContext.RANK_KEY) + "/" + MDC.get("worker")).get(),
          "the worker's own MDC back afterwards");
    } finally {
      worker.shutdownNow();
    }
  }
}
