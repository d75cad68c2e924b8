package org.mpibuild.programs;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.function.IntToDoubleFunction;
import org.mpibuild.spi.Communicator.Datatype;

/** Values of a collective's datatype in a buffer, as the stream-ordered checks write and read them. */
final class TypedValues {
  private TypedValues() {}

  /** A direct buffer in native order holding {@code count} values of {@code type}, value i being {@code v(i)}. */
  static ByteBuffer of(Datatype type, int count, IntToDoubleFunction v) {
    ByteBuffer b = ByteBuffer.allocateDirect(count * type.bytes()).order(ByteOrder.nativeOrder());
    for (int i = 0; i < count; i++) {
      double x = v.applyAsDouble(i);
      switch (type) {
        case INT -> b.putInt(i * 4, (int) x);
        case LONG -> b.putLong(i * 8, (long) x);
        case FLOAT -> b.putFloat(i * 4, (float) x);
        case DOUBLE -> b.putDouble(i * 8, x);
      }
    }
    return b;
  }

  /** Value {@code i} of {@code type} in {@code b}, in the buffer's byte order. */
  static double at(ByteBuffer b, Datatype type, int i) {
    return switch (type) {
      case INT -> b.getInt(i * 4);
      case LONG -> b.getLong(i * 8);
      case FLOAT -> b.getFloat(i * 4);
      case DOUBLE -> b.getDouble(i * 8);
    };
  }
}
