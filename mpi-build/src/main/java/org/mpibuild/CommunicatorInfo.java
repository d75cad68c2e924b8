package org.mpibuild;

import java.util.Objects;

/**
 * How an {@link MpiBuild} talks to MPI, as {@link MpiBuild#communicator()} returns it: the binding's own
 * description of its communicator, this rank, the number of ranks, and whether the builds are local (no MPI).
 *
 * <p>{@link #toString()} is the description, so that the value can be logged or concatenated as it is:
 * {@code "... on " + mpiBuild.communicator()}. The description's wording belongs to the binding (or to the
 * communicator the program passed to {@link MpiBuildBuilder#communicator}) and may change between versions;
 * a program that decides anything from it should read {@link #local()}, {@link #rank()} and {@link #size()}
 * instead.
 *
 * @param description the binding's description of the communicator, for logs, for example
 *     {@code "mpi.jar COMM_WORLD (duplicate), 4 ranks"} or {@code "local (no MPI), 1 rank"}
 * @param rank this process's rank in the build communicator; 0 in local mode
 * @param size the number of ranks in the build communicator; 1 in local mode
 * @param local whether the builds are local: no MPI, this process alone
 */
public record CommunicatorInfo(String description, int rank, int size, boolean local) {

  /**
   * Checks that there is a description.
   *
   * @param description the binding's description of the communicator
   * @param rank this process's rank in the build communicator
   * @param size the number of ranks in the build communicator
   * @param local whether the builds are local
   * @throws NullPointerException if {@code description} is null
   */
  public CommunicatorInfo {
    Objects.requireNonNull(description, "description");
  }

  /**
   * Returns the description, as {@link MpiBuild#communicator()} returned it when it was a {@code String}.
   *
   * @return the binding's description of the communicator
   */
  @Override
  public String toString() {
    return description;
  }
}
