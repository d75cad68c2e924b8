package org.mpibuild.spi;

import java.nio.ByteBuffer;

/**
 * The few MPI operations a collective build needs, on one intracommunicator.
 *
 * <p>This is the only way the library talks to MPI, so that another binding (Open MPI's {@code mpi.jar},
 * a binding over the MPI C library, or the in-process one used by unit tests) can carry the same protocol.
 * Every method except {@link #rank()}, {@link #size()} and {@link #abort} is collective: all ranks call
 * it in the same order with matching arguments. Implementations throw
 * {@link org.mpibuild.CommunicationException} when MPI reports an error.
 */
public interface Communicator extends AutoCloseable {

  /**
   * Returns the rank of the calling process in this communicator.
   *
   * @return the rank, from 0 to {@code size() - 1}
   */
  int rank();

  /**
   * Returns the number of ranks.
   *
   * @return the size, at least 1
   */
  int size();

  /**
   * Broadcasts the bytes between the buffer's position and its limit from {@code root} to every rank.
   * The buffer must be direct so that no copy is made; its position and limit are not changed.
   *
   * @param buffer a direct buffer holding at most {@code Integer.MAX_VALUE} remaining bytes, equal in
   *     size on every rank
   * @param root the rank whose bytes are sent
   */
  void broadcast(ByteBuffer buffer, int root);

  /**
   * Returns the element-wise maximum of {@code values} over all ranks.
   *
   * @param values this rank's values, of equal length on every rank
   * @return the maxima, on every rank
   */
  int[] allReduceMax(int[] values);

  /**
   * Gathers one byte array from every rank to every rank. Arrays may differ in length.
   *
   * @param mine this rank's contribution
   * @return every rank's contribution, indexed by rank
   */
  byte[][] allGather(byte[] mine);

  /**
   * Splits this communicator into one communicator per shared-memory node ({@code MPI_Comm_split_type}
   * with {@code MPI_COMM_TYPE_SHARED}), keeping rank order. Collective. The caller closes the result.
   *
   * @return this rank's node communicator
   */
  Communicator splitByNode();

  /**
   * Ends the whole job at once, after printing the message. Used only when the ranks can no longer agree
   * on what to do next, so that no rank is left waiting. Does not return.
   *
   * @param message why, for the person who reads the job's output
   * @param errorCode the exit status mpirun should report
   */
  void abort(String message, int errorCode);

  /**
   * Describes the binding and communicator, for logs, for example {@code "mpi.jar COMM_WORLD (dup), 4 ranks"}.
   *
   * @return a short description
   */
  String description();

  /** Frees what the binding created for this communicator. Never finalizes MPI itself. */
  @Override
  default void close() {}
}
