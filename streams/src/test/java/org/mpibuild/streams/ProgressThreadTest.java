package org.mpibuild.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.mpibuild.testkit.InProcessCommunicator;

class ProgressThreadTest {
  private final CollectiveTickets tickets = CollectiveTickets.of(new InProcessCommunicator.World(1, 20_000).rank(0));

  @Test
  void runsItsLoopOnceOnADaemonThreadThatAWakeUnparks() throws Exception {
    ProgressThread progress = new ProgressThread("queue 7", tickets);
    progress.wake(); // before the start: nothing to wake
    assertFalse(progress.ended(), "not started is not ended");
    AtomicReference<Thread> ran = new AtomicReference<>();
    CountDownLatch parked = new CountDownLatch(1);
    progress.start(() -> {
      ran.set(Thread.currentThread());
      parked.countDown();
      LockSupport.park(); // until woken
    });
    assertTrue(parked.await(5, TimeUnit.SECONDS));
    assertEquals("mpi-build-stream queue 7", ran.get().getName());
    assertTrue(ran.get().isDaemon());
    assertThrows(IllegalStateException.class, () -> progress.start(() -> { }), "once");
    progress.wake();
    progress.join(5_000);
    assertTrue(progress.ended());
  }
}
