package org.mpibuild.internal.startup;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class NodeCoresTest {
  @Test
  void kernelCpuListsAreCounted() {
    assertEquals(1, NodeCores.count("0\n"));
    assertEquals(2, NodeCores.count("0-1"));
    assertEquals(8, NodeCores.count("0-3,8-11"));
    assertEquals(3, NodeCores.count("0,2,4"));
    assertThrows(IllegalArgumentException.class, () -> NodeCores.count("3-1"));
    assertThrows(NumberFormatException.class, () -> NodeCores.count("x"));
  }

  @Test
  void theCpusetIsFoundThroughEitherCgroupVersion() {
    assertEquals(List.of(Path.of("/sys/fs/cgroup/job/step/cpuset.cpus.effective")),
        NodeCores.cpusets(List.of("0::/job/step")));
    assertEquals(List.of(Path.of("/sys/fs/cgroup/cpuset/slurm/uid_0/job_7/cpuset.effective_cpus")),
        NodeCores.cpusets(List.of("4:memory:/slurm/uid_0/job_7", "3:cpuset:/slurm/uid_0/job_7", "0::/")).subList(1, 2));
    assertEquals(List.of(), NodeCores.cpusets(List.of("garbage", "1:cpu:relative")));
  }

  @Test
  void theNodeHasAtLeastTheProcessorsThisProcessMayUse() {
    assertTrue(NodeCores.online() >= Runtime.getRuntime().availableProcessors());
  }
}
