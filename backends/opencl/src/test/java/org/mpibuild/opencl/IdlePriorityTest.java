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
  void anyCoreWhereTasksetWorksElseNothing(@TempDir Path dir) throws IOException {
    assertEquals(List.of(), IdlePriority.anyCore(List.of(dir.toString())), "no taskset");
    script(dir, "true", 0);
    script(dir, "taskset", 1); // a system that refuses the affinity
    assertEquals(List.of(), IdlePriority.anyCore(List.of(dir.toString())), "a taskset that fails is not used");
    script(dir, "taskset", 0);
    assertEquals(List.of(dir.resolve("taskset").toString(), "-c", "0-4095"),
        IdlePriority.anyCore(List.of(dir.toString())));
  }

  /** A thread that lowers itself is at the idle priority; the thread that started it is not. */
  @Test
  void aThreadLowersItselfAloneAndBindsItself() throws Exception {
    String[] seen = new String[2];
    boolean[] done = new boolean[2];
    String cpus = IdlePriority.processorsOfThisThread();
    Thread t = new Thread(() -> {
      done[0] = IdlePriority.lowerThisThread();
      seen[0] = read("/proc/thread-self/sched") + read("/proc/thread-self/stat");
      done[1] = IdlePriority.bindThisThread(cpus);
    });
    t.start();
    t.join();
    seen[1] = read("/proc/thread-self/sched") + read("/proc/thread-self/stat");
    assertTrue(done[0], "this machine has chrt or renice");
    assertTrue(idle(seen[0]), "the thread that lowered itself:\n" + seen[0]);
    assertTrue(!idle(seen[1]), "its starter:\n" + seen[1]);
    assertTrue(cpus != null && !cpus.isEmpty() && done[1], "bound to " + cpus);
  }

  private static boolean idle(String schedAndStat) {
    if (schedAndStat.matches("(?s).*policy\\s*:\\s*5\\b.*")) {
      return true;
    }
    String stat = schedAndStat.substring(schedAndStat.lastIndexOf(')') + 2);
    return stat.split(" ")[16].equals("19");
  }

  private static String read(String file) {
    try {
      return Files.readString(Path.of(file));
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
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
