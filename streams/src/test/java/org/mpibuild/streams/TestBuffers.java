package org.mpibuild.streams;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** Host buffers for the streams tests. */
final class TestBuffers {
  private TestBuffers() {}

  /** A direct buffer in the native order holding {@code values}, as a device buffer's staging would. */
  static ByteBuffer ints(int... values) {
    ByteBuffer b = ByteBuffer.allocateDirect(values.length * Integer.BYTES).order(ByteOrder.nativeOrder());
    for (int i = 0; i < values.length; i++) {
      b.putInt(i * Integer.BYTES, values[i]);
    }
    return b;
  }
}
