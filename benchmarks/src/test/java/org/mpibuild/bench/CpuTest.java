package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CpuTest {
  @Test
  void childrensTimeIsCutimePlusCstime() {
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ...
    String stat = "4242 (ja va) (x)) S 1 4242 4242 0 -1 4194304 100 200 0 0 11 12 250 30 20 0 19 0 5 6 7";
    assertEquals(2_800_000_000L, Cpu.childrenNanos(stat), "(250 + 30) ticks at 100 per second");
    assertEquals(230_000_000L, Cpu.ownNanos(stat), "(11 + 12) ticks at 100 per second");
  }

  @Test
  void aChildThatHasNotEndedCountsAsFarAsItRan() throws Exception {
    Process busy = new ProcessBuilder("/bin/sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; sleep 30")
        .start();
    try {
      Thread.sleep(1500);
      long before = Cpu.nanos();
      long with = Cpu.nanosWithLiveChildren();
      assertTrue(with - before >= 100_000_000L, "the running child's CPU: " + (with - before) + " ns");
    } finally {
      busy.destroyForcibly().waitFor();
    }
  }

  @Test
  void thisProcessCounts() {
    assertTrue(Cpu.nanos() > 0);
  }
}
