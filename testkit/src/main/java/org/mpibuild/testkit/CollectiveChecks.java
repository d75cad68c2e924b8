package org.mpibuild.testkit;

import java.nio.ByteBuffer;
import java.util.Arrays;
import org.mpibuild.CommunicationException;
import org.mpibuild.spi.Communicator;

/**
 * The contract's blocking collectives: rank and size, all-reduce, all-gather, broadcasts from every root, of
 * nothing and of a mebibyte, heap buffers refused; an error MPI reports; the thread level and description.
 */
final class CollectiveChecks extends ContractCheck {
  CollectiveChecks(Communicator comm) {
    super(comm);
  }

  void rankAndSize() {
    that(size >= 1, "size()", "is " + size + ", not at least 1");
    that(rank >= 0 && rank < size, "rank()", "is " + rank + ", not in 0.." + (size - 1));
    that(comm.rank() == rank && comm.size() == size, "rank()/size()", "changed between two calls");
    byte[][] ranks = comm.allGather(new byte[] {(byte) rank, (byte) (rank >> 8), (byte) size, (byte) (size >> 8)});
    that(ranks.length == size, "allGather", "returned " + ranks.length + " arrays for " + size + " ranks");
    for (int r = 0; r < size; r++) {
      int theirRank = (ranks[r][0] & 0xff) | (ranks[r][1] & 0xff) << 8;
      int theirSize = (ranks[r][2] & 0xff) | (ranks[r][3] & 0xff) << 8;
      that(theirRank == r, "rank()", "slot " + r + " of an all-gather holds rank " + theirRank);
      that(theirSize == size, "size()", "rank " + r + " says " + theirSize + ", this rank " + size);
    }
  }

  void allReduce() {
    int[] in = reduceInput();
    int[] copy = in.clone();
    int[] out = comm.allReduceMax(in);
    that(Arrays.equals(out, reduceExpected()), "allReduceMax", "gave " + Arrays.toString(out) + ", not "
        + Arrays.toString(reduceExpected()));
    that(Arrays.equals(in, copy), "allReduceMax", "changed its input to " + Arrays.toString(in));
    int[] none = comm.allReduceMax(new int[0]);
    that(none != null && none.length == 0, "allReduceMax", "of no values gave " + Arrays.toString(none));
  }

  private static byte[] gathered(int r) {
    byte[] b = new byte[r * 3];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) (r * 31 + i);
    }
    return b;
  }

  void allGather() {
    byte[] mine = gathered(rank);
    byte[] copy = mine.clone();
    byte[][] all = comm.allGather(mine);
    that(all.length == size, "allGather", "returned " + all.length + " arrays for " + size + " ranks");
    for (int r = 0; r < size; r++) {
      that(Arrays.equals(all[r], gathered(r)), "allGather", "slot " + r + " holds " + Arrays.toString(all[r])
          + ", not rank " + r + "'s " + Arrays.toString(gathered(r)));
    }
    that(Arrays.equals(mine, copy), "allGather", "changed its input");
    byte[][] empty = comm.allGather(new byte[0]);
    that(empty.length == size && Arrays.stream(empty).allMatch(b -> b.length == 0), "allGather",
        "of empty arrays gave " + Arrays.deepToString(empty));
  }

  void broadcastFromEveryRoot() {
    for (int root = 0; root < size; root++) {
      ByteBuffer b = windowed(root, 1);
      comm.broadcast(b, root);
      checkWindow(b, root, 1, "broadcast");
    }
  }

  void broadcastOfNothingAndOfAMebibyte() {
    ByteBuffer none = ByteBuffer.allocateDirect(8).position(3).limit(3);
    comm.broadcast(none, 0);
    that(none.position() == 3 && none.limit() == 3, "broadcast", "of no bytes moved the buffer");
    int root = size - 1;
    ByteBuffer big = ByteBuffer.allocateDirect(1 << 20);
    if (rank == root) {
      for (int i = 0; i < big.capacity(); i++) {
        big.put(i, (byte) (i * 7 + i / 4096));
      }
    }
    comm.broadcast(big, root);
    for (int i = 0; i < big.capacity(); i++) {
      if (big.get(i) != (byte) (i * 7 + i / 4096)) {
        that(false, "broadcast", "of 1 MiB from root " + root + ": byte " + i + " differs");
      }
    }
  }

  void heapBuffersAreRefused() {
    ByteBuffer heap = ByteBuffer.allocate(16);
    try {
      comm.broadcast(heap, 0);
      that(false, "broadcast", "took a heap buffer (the SPI asks for a direct one, so that no copy is made)");
    } catch (IllegalArgumentException expected) {
      // refused on every rank, before any communication
    }
  }

  void anErrorMpiReportsIsACommunicationExceptionOnEveryRank() {
    ByteBuffer b = ByteBuffer.allocateDirect(8);
    try {
      comm.broadcast(b, size);
      that(false, "broadcast", "from root " + size + " of " + size + " ranks returned normally");
    } catch (CommunicationException expected) {
      that(expected.getMessage() != null && !expected.getMessage().isBlank(), "broadcast",
          "threw a CommunicationException without a message");
    } catch (RuntimeException other) {
      throw new AssertionError(where("broadcast") + "from root " + size + " of " + size + " ranks threw " + other
          + ", not a CommunicationException (the SPI's exception when MPI reports an error)", other);
    }
    int[] max = comm.allReduceMax(new int[] {rank});
    that(max[0] == size - 1, "allReduceMax", "after a refused broadcast gave " + max[0]);
  }

  void threadLevelAndDescription() {
    that(comm.threadLevel() != null, "threadLevel", "is null");
    String d = comm.description();
    that(d != null && !d.isBlank(), "description", "is empty");
  }
}
