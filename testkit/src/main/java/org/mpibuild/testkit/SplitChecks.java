package org.mpibuild.testkit;

import java.nio.ByteBuffer;
import java.util.Arrays;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Request;

/**
 * The contract's new communicators: splits by colour, a split of everyone (a duplicate, whose messages never
 * meet the parent's), and the node communicator.
 */
final class SplitChecks extends ContractCheck {
  SplitChecks(Communicator comm) {
    super(comm);
  }

  void splitByColour() {
    int colour = rank % 2;
    try (Communicator half = comm.split(colour)) {
      int members = (size - colour + 1) / 2;
      that(half.size() == members, "split", "colour " + colour + " has " + half.size() + " ranks, not " + members);
      that(half.rank() == rank / 2, "split", "gave rank " + half.rank() + ", not " + rank / 2
          + " (ranks keep their order)");
      int[] max = half.allReduceMax(new int[] {rank});
      int highest = colour + 2 * (members - 1);
      that(max[0] == highest, "split", "an all-reduce over colour " + colour + " gave " + max[0] + ", not " + highest);
      ByteBuffer b = ByteBuffer.allocateDirect(4);
      if (half.rank() == 0) {
        b.putInt(0, 500 + rank);
      }
      half.broadcast(b, 0);
      that(b.getInt(0) == 500 + colour, "split", "a broadcast over colour " + colour + " gave " + b.getInt(0));
    }
    int[] after = comm.allReduceMax(new int[] {rank});
    that(after[0] == size - 1, "split", "closing the split broke the parent (all-reduce gave " + after[0] + ")");
  }

  void aSplitOfEveryoneIsADuplicate() {
    try (Communicator dup = comm.split(0)) {
      that(dup.size() == size && dup.rank() == rank, "split", "of everyone gave rank " + dup.rank() + " of "
          + dup.size());
      // A broadcast pending on the parent and one on the duplicate, of one size, never exchange their bytes.
      ByteBuffer parent = windowed(0, 30);
      Request pending = comm.iBroadcast(parent, 0);
      ByteBuffer child = windowed(0, 31);
      dup.broadcast(child, 0);
      pending.await();
      checkWindow(parent, 0, 30, "split (the parent's iBroadcast)");
      checkWindow(child, 0, 31, "split (the duplicate's broadcast)");
    }
  }

  void nodeCommunicator() {
    try (Communicator node = comm.splitByNode()) {
      that(node.size() >= 1 && node.size() <= size, "splitByNode", "gave size " + node.size());
      byte[][] members = node.allGather(new byte[] {(byte) rank, (byte) (rank >> 8)});
      int[] parentRanks = Arrays.stream(members).mapToInt(m -> (m[0] & 0xff) | (m[1] & 0xff) << 8).toArray();
      for (int i = 1; i < parentRanks.length; i++) {
        that(parentRanks[i - 1] < parentRanks[i], "splitByNode", "did not keep rank order: "
            + Arrays.toString(parentRanks));
      }
      that(parentRanks[node.rank()] == rank, "splitByNode", "rank " + node.rank() + " of the node holds rank "
          + parentRanks[node.rank()] + " of the parent");
      // Every rank of the parent is on exactly one node, and every rank of a node sees the same members.
      byte[] mine = new byte[parentRanks.length * 2];
      for (int i = 0; i < parentRanks.length; i++) {
        mine[2 * i] = (byte) parentRanks[i];
        mine[2 * i + 1] = (byte) (parentRanks[i] >> 8);
      }
      byte[][] all = comm.allGather(mine);
      for (int r = 0; r < size; r++) {
        for (int q = 0; q < size; q++) {
          boolean rHasQ = contains(all[r], q);
          that(rHasQ == contains(all[q], r), "splitByNode", "rank " + r + " counts rank " + q + " on its node, but "
              + "rank " + q + " does not agree");
          if (rHasQ) {
            that(Arrays.equals(all[r], all[q]), "splitByNode", "ranks " + r + " and " + q + " share a node but list "
                + "different members");
          }
        }
        that(contains(all[r], r), "splitByNode", "rank " + r + " is not on its own node");
      }
    }
  }

  private static boolean contains(byte[] members, int rank) {
    for (int i = 0; i < members.length; i += 2) {
      if (((members[i] & 0xff) | (members[i + 1] & 0xff) << 8) == rank) {
        return true;
      }
    }
    return false;
  }
}
