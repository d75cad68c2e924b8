package org.mpibuild.spi;

/**
 * Where this rank runs among the ranks of its node, from the communicator's node split
 * ({@code MPI_Comm_split_type} with {@code MPI_COMM_TYPE_SHARED}). A backend picks this rank's device from
 * it: the communicator knows the node's ranks, where a launcher's variables may describe another
 * communicator, or nothing at all.
 *
 * @param nodeRank this rank's rank among the ranks of its node, from 0
 * @param nodeSize how many ranks of the communicator run on this node
 */
public record Placement(int nodeRank, int nodeSize) {

  /** One rank alone on its node: local mode, or a borrowed backend. */
  public static final Placement ALONE = new Placement(0, 1);

  /**
   * Checks the values.
   *
   * @param nodeRank this rank's rank among the ranks of its node, from 0
   * @param nodeSize how many ranks of the communicator run on this node
   * @throws IllegalArgumentException if {@code nodeRank} is not in {@code [0, nodeSize)}
   */
  public Placement {
    if (nodeSize < 1 || nodeRank < 0 || nodeRank >= nodeSize) {
      throw new IllegalArgumentException("node rank " + nodeRank + " of " + nodeSize + " ranks on the node");
    }
  }
}
