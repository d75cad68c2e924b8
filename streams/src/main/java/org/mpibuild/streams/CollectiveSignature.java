package org.mpibuild.streams;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/**
 * What a stream-ordered collective is on one rank (its kind, its count or size, its datatype and reduction, its
 * root), packed in two longs, and the check that every rank calls the same one before any data moves: MPI
 * ends the job on a count that differs ({@code MPI_ERR_TRUNCATE}), and says nothing of a datatype, a reduction
 * or a root that differ. The check is one all-reduce MAX of {@code [a, -a, b, -b, status]}: the ranks agree
 * exactly when the maximum of each value is minus the maximum of its negation. Only where they do not, a second
 * all-reduce MAX of every rank's pair, each in its own slots, lets every rank name the same ranks and fields.
 */
final class CollectiveSignature {
  /** The longs of the check: the two packed values, their negations, the status word. */
  static final int CHECK_LONGS = 5;

  private final long a;
  private final long b;

  private CollectiveSignature(long a, long b) {
    this.a = a;
    this.b = b;
  }

  /** An all-reduce of {@code count} values. */
  static CollectiveSignature allReduce(int count, Datatype type, ReduceOp op) {
    return new CollectiveSignature(pack(2, type.ordinal() + 1, op.ordinal() + 1, 0), count);
  }

  /** A broadcast of {@code bytes} from {@code root}. */
  static CollectiveSignature broadcast(long bytes, int root) {
    return new CollectiveSignature(pack(1, 0, 0, root + 1L), bytes);
  }

  /** kind: bits 56-57; datatype + 1: bits 48-55; reduction + 1: bits 40-47; root + 1: bits 0-31. Never negative. */
  private static long pack(int kind, int type, int op, long root) {
    return (long) kind << 56 | (long) type << 48 | (long) op << 40 | (root & 0xffffffffL);
  }

  /** Writes this rank's check, with its status word, into {@code out} (at least {@link #CHECK_LONGS} longs). */
  void writeCheck(ByteBuffer out, long status) {
    out.putLong(0, a).putLong(8, -a).putLong(16, b).putLong(24, -b).putLong(32, status);
  }

  /** Whether every rank called the same collective, from the check's all-reduce. */
  static boolean agreed(ByteBuffer in) {
    return in.getLong(0) == -in.getLong(8) && in.getLong(16) == -in.getLong(24);
  }

  /** The status word from the check's all-reduce: the highest failing rank + 1 and its device code, or 0. */
  static long status(ByteBuffer in) {
    return in.getLong(32);
  }

  /** The longs of the naming all-reduce: two per rank. */
  static int namesLongs(int size) {
    return 2 * size;
  }

  /** Writes this rank's pair into its own slots of {@code out}, and the smallest long everywhere else. */
  void writeNames(ByteBuffer out, int rank, int size) {
    for (int i = 0; i < namesLongs(size); i++) {
      out.putLong(8 * i, Long.MIN_VALUE);
    }
    out.putLong(16 * rank, a).putLong(16 * rank + 8, b);
  }

  /**
   * The message every rank gives, from the naming all-reduce: what rank 0 called, then each rank that called
   * something else and how it differs.
   *
   * @param ticket the collective's number, the same on every rank
   */
  static String mismatch(ByteBuffer names, int size, long ticket) {
    CollectiveSignature zero = new CollectiveSignature(names.getLong(0), names.getLong(8));
    StringBuilder sb = new StringBuilder("collective #").append(ticket).append(" failed: the ranks called different "
        + "collectives; rank 0 called ").append(zero);
    for (int r = 1; r < size; r++) {
      CollectiveSignature other = new CollectiveSignature(names.getLong(16 * r), names.getLong(16 * r + 8));
      List<String> fields = zero.differences(other);
      if (!fields.isEmpty()) {
        sb.append("; rank ").append(r).append(" differs in ").append(String.join(", ", fields));
      }
    }
    return sb.append(". Nothing was sent: every rank's buffer keeps its values").toString();
  }

  private int kind() {
    return (int) (a >>> 56);
  }

  private int type() {
    return (int) (a >>> 48) & 0xff;
  }

  private int op() {
    return (int) (a >>> 40) & 0xff;
  }

  private long root() {
    return (a & 0xffffffffL) - 1;
  }

  /** The fields in which {@code other} differs, with its value: "count (8)", "root (1)". */
  List<String> differences(CollectiveSignature other) {
    List<String> out = new ArrayList<>();
    if (kind() != other.kind()) {
      out.add("kind (" + other.name() + ")");
      return out;
    }
    if (b != other.b) {
      out.add((kind() == 2 ? "count (" : "size (") + other.b + (kind() == 2 ? ")" : " bytes)"));
    }
    if (type() != other.type()) {
      out.add("datatype (" + Datatype.values()[other.type() - 1] + ")");
    }
    if (op() != other.op()) {
      out.add("reduction (" + ReduceOp.values()[other.op() - 1] + ")");
    }
    if (root() != other.root()) {
      out.add("root (" + other.root() + ")");
    }
    return out;
  }

  private String name() {
    return kind() == 2 ? "an all-reduce" : "a broadcast";
  }

  @Override
  public String toString() {
    return kind() == 2
        ? "an all-reduce (" + ReduceOp.values()[op() - 1] + " of " + b + " " + Datatype.values()[type() - 1] + ")"
        : "a broadcast of " + b + " bytes from rank " + root();
  }
}
