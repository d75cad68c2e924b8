package org.mpibuild.internal.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.mpibuild.spi.Communicator;

class BackoffTest {
  @Test
  void sleepsAreA32ndOfTheWaitBetweenTenMicrosecondsAndOneMillisecond() {
    assertEquals(10_000, Backoff.sleepAfter(0));
    assertEquals(10_000, Backoff.sleepAfter(320_000));
    assertEquals(100_000, Backoff.sleepAfter(3_200_000));
    assertEquals(1_000_000, Backoff.sleepAfter(60_000_000_000L));
  }

  @Test
  void workRunsBetweenPollsUntilTheRequestCompletes() {
    AtomicInteger polls = new AtomicInteger();
    AtomicInteger work = new AtomicInteger();
    Communicator.Request request = new Communicator.Request() {
      @Override
      public boolean test() {
        return polls.incrementAndGet() > 5;
      }

      @Override
      public void await() {}
    };
    new Backoff(0).await(request, () -> work.incrementAndGet() <= 3);
    assertTrue(polls.get() >= 6, "returns only once the request completed");
    assertTrue(work.get() >= 4, "the three steps of work ran, then the wait slept: " + work.get());
  }

  @Test
  void aNegativeSpinIsRefused() {
    assertTrue(assertThrows(IllegalArgumentException.class, () -> new Backoff(-1)).getMessage().contains("-1"));
  }
}
