package org.mpibuild.streams;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Direct host buffers that stream-ordered operations stage their data in, reused from one operation to the
 * next of the same size: a loop of collectives on one buffer then allocates (and the JVM zeroes) nothing after
 * its first iterations. A buffer comes back only from an operation that completed, when neither MPI nor the
 * device can touch it any more; one whose operation failed is left to the garbage collector, since device
 * work behind a failed gate may still read it. At most {@link #limitBytes} bytes wait for reuse.
 */
final class StagingPool {
  private final long limitBytes;
  private final Map<Integer, ArrayDeque<ByteBuffer>> free = new HashMap<>();
  private final Set<ByteBuffer> lent = Collections.newSetFromMap(new IdentityHashMap<>());
  private long freeBytes;

  StagingPool(long limitBytes) {
    this.limitBytes = limitBytes;
  }

  /** A buffer of exactly {@code bytes} bytes, position 0, native byte order; its contents are undefined. */
  synchronized ByteBuffer take(int bytes) {
    ArrayDeque<ByteBuffer> q = free.get(bytes);
    ByteBuffer b = q == null ? null : q.pollLast();
    if (b == null) {
      b = ByteBuffer.allocateDirect(bytes);
    } else {
      freeBytes -= bytes;
    }
    b.clear().order(ByteOrder.nativeOrder());
    lent.add(b);
    return b;
  }

  /** Takes back a buffer that {@link #take} lent, once nothing uses it; ignores any other buffer. */
  synchronized void give(ByteBuffer b) {
    if (b == null || !lent.remove(b)) {
      return;
    }
    if (freeBytes + b.capacity() <= limitBytes) {
      free.computeIfAbsent(b.capacity(), k -> new ArrayDeque<>()).addLast(b);
      freeBytes += b.capacity();
    }
  }

  /** Forgets a lent buffer that must not be reused (its operation failed). */
  synchronized void forget(ByteBuffer b) {
    if (b != null) {
      lent.remove(b);
    }
  }

  /** The bytes waiting for reuse. */
  synchronized long freeBytes() {
    return freeBytes;
  }

  /** Drops every buffer waiting for reuse. */
  synchronized void clear() {
    free.clear();
    freeBytes = 0;
  }
}
