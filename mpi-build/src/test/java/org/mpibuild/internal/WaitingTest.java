package org.mpibuild.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.mpibuild.spi.Communicator;

class WaitingTest {
  @Test
  void sleepsAreA32ndOfTheWaitBetweenTenMicrosecondsAndOneMillisecond() {
    assertEquals(10_000, Waiting.sleepAfter(0));
    assertEquals(10_000, Waiting.sleepAfter(320_000));
    assertEquals(100_000, Waiting.sleepAfter(3_200_000));
    assertEquals(1_000_000, Waiting.sleepAfter(60_000_000_000L));
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
    new Waiting(0).await(request, () -> work.incrementAndGet() <= 3);
    assertTrue(polls.get() >= 6, "returns only once the request completed");
    assertTrue(work.get() >= 4, "the three steps of work ran, then the wait slept: " + work.get());
  }

  @Test
  void aNegativeSpinIsRefused() {
    assertTrue(assertThrows(IllegalArgumentException.class, () -> new Waiting(-1)).getMessage().contains("-1"));
  }

  @Test
  void aLentPayloadGoesBackOnceAndADetachedCopyOutlivesIt() {
    ByteBuffer buffer = ByteBuffer.allocateDirect(16);
    AtomicInteger returned = new AtomicInteger();
    Payload lent = Payload.lent(buffer, 4, returned::incrementAndGet);
    lent.copyFrom(ByteBuffer.wrap(new byte[] {1, 2, 3, 4}));
    Payload copy = lent.detached();
    lent.release();
    lent.release();
    assertEquals(1, returned.get(), "released exactly once");
    buffer.put(0, (byte) 9); // the pool reuses the buffer
    assertEquals(1, copy.toByteArray()[0], "the copy is its own");
    assertEquals(false, copy.isLent());
  }
}
