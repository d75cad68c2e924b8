package org.mpibuild.internal.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** A payload lent from a pool of receive buffers. */
class PayloadTest {
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
