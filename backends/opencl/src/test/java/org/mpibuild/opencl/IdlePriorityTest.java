package org.mpibuild.opencl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IdlePriorityTest {
  @Test
  void chrtWhereItWorksElseNiceElseNothing(@TempDir Path dir) throws IOException {
    assertEquals(List.of(), IdlePriority.find(List.of(dir.toString())), "nothing found: the normal priority");
    script(dir, "nice", 0);
    assertEquals(List.of(dir.resolve("nice").toString(), "-n", "19"), IdlePriority.find(List.of(dir.toString())));
    script(dir, "true", 0);
    script(dir, "chrt", 1); // a system that refuses SCHED_IDLE
    assertEquals(List.of(dir.resolve("nice").toString(), "-n", "19"), IdlePriority.find(List.of(dir.toString())),
        "a chrt that fails is not used");
    script(dir, "chrt", 0);
    assertEquals(List.of(dir.resolve("chrt").toString(), "--idle", "0"), IdlePriority.find(List.of(dir.toString())));
  }

  @Test
  void theChildRunsAtTheIdlePriorityHere() throws Exception {
    List<String> prefix = IdlePriority.prefix();
    assertTrue(!prefix.isEmpty(), "this machine has chrt or nice (util-linux and coreutils are essential in Debian)");
    Process p = new ProcessBuilder(concat(prefix, List.of("/bin/sh", "-c", "cat /proc/self/sched /proc/self/stat")))
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    assertEquals(0, p.waitFor(), out);
    if (prefix.get(0).endsWith("chrt")) {
      assertTrue(out.matches("(?s).*policy\\s*:\\s*5\\b.*"), "SCHED_IDLE is policy 5:\n" + out);
    } else {
      String[] stat = out.substring(out.lastIndexOf(')') + 2).split(" ");
      assertEquals("19", stat[16], "nice value");
    }
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> out = new java.util.ArrayList<>(a);
    out.addAll(b);
    return out;
  }

  private static void script(Path dir, String name, int exit) throws IOException {
    Path p = dir.resolve(name);
    Files.writeString(p, "#!/bin/sh\nexit " + exit + "\n");
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwx------"));
  }
}
