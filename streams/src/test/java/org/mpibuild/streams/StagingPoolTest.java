package org.mpibuild.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

class StagingPoolTest {
  @Test
  void aBufferGivenBackIsLentAgainForTheSameSize() {
    StagingPool pool = new StagingPool(1 << 20);
    ByteBuffer a = pool.take(64);
    a.position(10);
    pool.give(a);
    assertEquals(64, pool.freeBytes());
    assertNotSame(a, pool.take(32), "another size gets its own buffer");
    ByteBuffer b = pool.take(64);
    assertSame(a, b);
    assertEquals(0, b.position(), "lent cleared");
    assertEquals(ByteOrder.nativeOrder(), b.order());
    assertEquals(0, pool.freeBytes());
  }

  @Test
  void keepsAtMostItsLimitAndIgnoresBuffersItDidNotLend() {
    StagingPool pool = new StagingPool(100);
    ByteBuffer a = pool.take(60);
    ByteBuffer b = pool.take(60);
    pool.give(a);
    pool.give(b); // past the limit: dropped
    assertEquals(60, pool.freeBytes());
    pool.give(ByteBuffer.allocateDirect(10)); // not lent
    pool.give(a); // already given back
    assertEquals(60, pool.freeBytes());
  }

  @Test
  void aForgottenBufferNeverComesBack() {
    StagingPool pool = new StagingPool(1 << 20);
    ByteBuffer a = pool.take(8);
    pool.forget(a);
    pool.give(a);
    assertEquals(0, pool.freeBytes());
    assertNotSame(a, pool.take(8));
    pool.clear();
    assertEquals(0, pool.freeBytes());
  }
}
