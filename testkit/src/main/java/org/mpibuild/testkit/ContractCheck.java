package org.mpibuild.testkit;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;
import org.mpibuild.spi.Communicator;

/**
 * A group of {@link CommunicatorContract}'s checks, run on one rank: the communicator, its rank and size, the
 * assertion that names them in a violation, and the test data that the groups share (broadcast windows, the
 * all-reduce's input, typed values in fenced buffers).
 */
abstract class ContractCheck {
  /** How long a non-blocking request may take to complete before the contract says it never did. */
  static final long REQUEST_DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(60);

  final Communicator comm;
  final int rank;
  final int size;

  ContractCheck(Communicator comm) {
    this.comm = comm;
    this.rank = comm.rank();
    this.size = comm.size();
  }

  // --- reporting

  String where(String method) {
    return "rank " + rank + " of " + size + ", " + method + ": ";
  }

  void that(boolean holds, String method, String otherwise) {
    if (!holds) {
      throw new AssertionError(where(method) + otherwise);
    }
  }

  // --- broadcast windows and the all-reduce's input

  /** A direct buffer of 64 bytes whose window 5..45 is the broadcast, the rest a fence of this rank's own. */
  ByteBuffer windowed(int root, int salt) {
    ByteBuffer b = ByteBuffer.allocateDirect(64);
    for (int i = 0; i < 64; i++) {
      b.put(i, (byte) (rank == root && i >= 5 && i < 45 ? payload(root, salt, i) : 0x70 + rank));
    }
    return b.position(5).limit(45);
  }

  static byte payload(int root, int salt, int i) {
    return (byte) (root * 17 + salt * 5 + i);
  }

  void checkWindow(ByteBuffer b, int root, int salt, String method) {
    that(b.position() == 5 && b.limit() == 45, method, "moved the buffer's position/limit to " + b.position()
        + "/" + b.limit() + " (root " + root + ")");
    ByteBuffer whole = b.duplicate().clear();
    for (int i = 0; i < 64; i++) {
      byte want = i >= 5 && i < 45 ? payload(root, salt, i) : (byte) (0x70 + rank);
      if (whole.get(i) != want) {
        that(false, method, "byte " + i + " is " + whole.get(i) + ", not " + want + " (root " + root + "; bytes 5..44 are "
            + "the broadcast, the others must stay as they were)");
      }
    }
  }

  int[] reduceInput() {
    return new int[] {rank, -rank, 7, size - 1 - rank, Integer.MIN_VALUE + rank, rank == size - 1 ? Integer.MAX_VALUE : 0};
  }

  int[] reduceExpected() {
    return new int[] {size - 1, 0, 7, size - 1, Integer.MIN_VALUE + size - 1, Integer.MAX_VALUE};
  }

  // --- typed values

  /** Where the values of a typed all-reduce start in its buffers: not at 0, so that a position ignored shows. */
  static final int AT = 8;

  /** The bytes after the values, inside the buffers' limits, that an all-reduce must leave alone. */
  static final int FENCE = 16;

  /**
   * Rank {@code r}'s {@code count} values of {@code type} in round {@code round}, as bytes in native order:
   * different on every rank and at every index, positive and negative, so that the sum, the minimum and the
   * maximum differ from each other and from any one rank's values (with 2 ranks or more); longs beyond 32
   * bits; floats and doubles with fractions whose sums are exact in any order.
   */
  static byte[] typedValues(int r, int count, Communicator.Datatype type, int round) {
    ByteBuffer b = ByteBuffer.allocate(count * type.bytes()).order(ByteOrder.nativeOrder());
    for (int i = 0; i < count; i++) {
      int sign = (i + r) % 2 == 0 ? 1 : -1;
      long v = sign * (3L * r + 11L * i + 5L * round + 1);
      switch (type) {
        case INT -> b.putInt(i * 4, (int) v);
        case LONG -> b.putLong(i * 8, v * (1L << 33) + r);
        case FLOAT -> b.putFloat(i * 4, v + 0.25f * r);
        case DOUBLE -> b.putDouble(i * 8, v * 1024.0 + 0.125 * r);
        default -> throw new IllegalArgumentException("type " + type);
      }
    }
    return b.array();
  }

  /** What {@code op} over every rank's {@link #typedValues} gives, by the kit's {@link Reductions}. */
  byte[] typedExpected(int count, Communicator.Datatype type, Communicator.ReduceOp op, int round) {
    Object[] all = new Object[size];
    for (int r = 0; r < size; r++) {
      all[r] = typedValues(r, count, type, round);
    }
    return Reductions.reduce(all, count, type, op);
  }

  /** A direct buffer in native order holding {@code values} at {@link #AT}, fenced with this rank's bytes. */
  ByteBuffer typedBuffer(byte[] values) {
    ByteBuffer b = ByteBuffer.allocateDirect(AT + values.length + FENCE + 8).order(ByteOrder.nativeOrder());
    for (int i = 0; i < b.capacity(); i++) {
      b.put(i, (byte) (0x50 + rank));
    }
    b.put(AT, values);
    return b.position(AT).limit(AT + values.length + FENCE);
  }

  /** Checks that {@code b} holds {@code values} at {@link #AT}, its fence untouched, position and limit kept. */
  void checkTyped(ByteBuffer b, byte[] values, String method, String what) {
    that(b.position() == AT && b.limit() == AT + values.length + FENCE, method, what + ": moved the buffer's "
        + "position/limit to " + b.position() + "/" + b.limit());
    ByteBuffer whole = b.duplicate().clear();
    for (int i = 0; i < whole.capacity(); i++) {
      boolean inside = i >= AT && i < AT + values.length;
      byte want = inside ? values[i - AT] : (byte) (0x50 + rank);
      if (whole.get(i) != want) {
        that(false, method, what + ": byte " + i + " is " + whole.get(i) + ", not " + want + (inside ? " (bytes "
            + AT + ".." + (AT + values.length - 1) + " are the values)" : " (outside the values: must stay)"));
      }
    }
  }
}
