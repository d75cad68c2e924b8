package org.mpibuild.testkit;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/** What MPI's predefined reductions compute, for the in-process communicator and the contract's checks. */
public final class Reductions {
  private Reductions() {}

  /**
   * Reduces every rank's values, element by element.
   *
   * @param contributions each rank's {@code count} values as bytes in native order
   * @return the result as bytes in native order
   */
  public static byte[] reduce(Object[] contributions, int count, Datatype type, ReduceOp op) {
    ByteBuffer out = ByteBuffer.wrap(((byte[]) contributions[0]).clone()).order(ByteOrder.nativeOrder());
    for (int r = 1; r < contributions.length; r++) {
      ByteBuffer in = ByteBuffer.wrap((byte[]) contributions[r]).order(ByteOrder.nativeOrder());
      for (int i = 0; i < count; i++) {
        int at = i * type.bytes();
        switch (type) {
          case INT -> out.putInt(at, (int) combine(op, out.getInt(at), in.getInt(at)));
          case LONG -> out.putLong(at, combine(op, out.getLong(at), in.getLong(at)));
          case FLOAT -> out.putFloat(at, (float) combine(op, out.getFloat(at), in.getFloat(at)));
          case DOUBLE -> out.putDouble(at, combine(op, out.getDouble(at), in.getDouble(at)));
          default -> throw new IllegalArgumentException("type " + type);
        }
      }
    }
    return out.array();
  }

  private static long combine(ReduceOp op, long a, long b) {
    return switch (op) {
      case SUM -> a + b;
      case MIN -> Math.min(a, b);
      case MAX -> Math.max(a, b);
    };
  }

  private static double combine(ReduceOp op, double a, double b) {
    return switch (op) {
      case SUM -> a + b;
      case MIN -> Math.min(a, b);
      case MAX -> Math.max(a, b);
    };
  }
}
