package org.mpibuild.internal.startup;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
  void theNodeHasAtLeastTheProcessorsThisProcessMayUse() {
    assertTrue(NodeCores.online() >= Runtime.getRuntime().availableProcessors());
  }
}
