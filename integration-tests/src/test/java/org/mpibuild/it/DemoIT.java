package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The demo, as `make demo` runs it: 4 ranks, and a summary counted from what the ranks did. */
class DemoIT {
  @Test
  void demoPrintsTheCountedSummary() {
    Mpirun.Job job = Mpirun.run(4, 300, "org.mpibuild.demo.Demo");
    try {
      assertEquals(0, job.exitCode(), job.describe());
      List<String> root = job.stdoutByRank().get(0);
      assertEquals("summary: ranks=4 compiles=1 loaded=4 verified=4 backend=opencl", root.get(root.size() - 1),
          job.describe());
      long rows = root.stream().filter(l -> l.matches("\\s+\\d+\\s+(root|receiver)\\s.*\\syes$")).count();
      assertEquals(4, rows, "one verified table row per rank\n" + job.describe());
      assertTrue(root.stream().anyMatch(l -> l.matches("\\s+0\\s+root\\s.*")), job.describe());
    } finally {
      Mpirun.delete(job.dir());
    }
  }
}
