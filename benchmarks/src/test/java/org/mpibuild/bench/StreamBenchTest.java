package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What the stream benchmark reads from a ping-pong job's output. */
class StreamBenchTest {
  private static String pipeline(String mode, double seconds, double host) {
    return "RESULT mode=" + mode + " ranks=2 rounds=50 expected=150 got=150 wrong_elements=0 correct=true seconds="
        + seconds + " host_seconds=" + host + " jit_seconds=0.01\nRUN on the queue\n";
  }

  @Test
  void aPingPongJobsLoopsAreGroupedByModeAndTheirMeansPaired() {
    String job = pipeline("ordered", 8, 0.02) + pipeline("manual", 9, 9) + pipeline("manual", 11, 11)
        + pipeline("ordered", 12, 0.04);
    Map<String, List<double[]>> loops = StreamBench.streamLoops(job, 2);
    assertEquals(10.0, StreamBench.meanOf(loops.get("ordered"), 0), 1e-9);
    assertEquals(10.0, StreamBench.meanOf(loops.get("manual"), 0), 1e-9, "both manual loops, not the first");
    assertEquals(0.03, StreamBench.meanOf(loops.get("ordered"), 1), 1e-9);
  }

  @Test
  void aPingPongJobWithoutEveryLoopIsRefused() {
    String wrong = pipeline("ordered", 8, 0.02).replace("correct=true", "correct=false") + pipeline("manual", 9, 9)
        + pipeline("manual", 11, 11) + pipeline("ordered", 12, 0.04);
    assertThrows(IllegalStateException.class, () -> StreamBench.streamLoops(wrong, 2));
  }
}
