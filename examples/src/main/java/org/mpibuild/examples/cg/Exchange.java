package org.mpibuild.examples.cg;

/**
 * How the solver's ranks communicate: the halo exchange of the search direction's edge rows and the sum over
 * ranks of a scalar on the device. {@link OrderedExchange} enqueues both on the device's queue (an OpenCL queue
 * or a CUDA stream); {@link ManualExchange} finishes the queue and calls MPI from the host. The solver
 * ({@link CgSolver}) makes the same calls in the same order with either, so both modes compute the same numbers.
 *
 * @param <B> a device buffer ({@code cl_mem}, {@code CUdeviceptr})
 */
interface Exchange<B> extends AutoCloseable {
  /**
   * Sends this rank's first row to the rank above and its last row to the rank below, and receives theirs, as
   * the rows are once the work already enqueued has finished; work enqueued afterwards sees the neighbours' rows.
   *
   * @param halo the buffers and neighbours
   */
  void halo(Halo<B> halo);

  /**
   * Replaces the one double in {@code scalar} by its sum over every rank, as it is once the work already enqueued
   * has finished; work enqueued afterwards sees the sum.
   *
   * @param scalar a device buffer holding one double
   */
  void sum(B scalar);

  /** Throws if an operation already finished has failed, and forgets the finished ones. Never waits. */
  void settle();

  /** Waits until every operation started has finished, and throws if one failed. */
  void finish();

  /** @return CPU nanoseconds used so far by the threads this exchange runs beside the program's own (0: none) */
  long helperCpuNanos();

  @Override
  void close();

  /**
   * The halo of one rank.
   *
   * @param firstRow a buffer whose first {@code bytes} are this rank's first row
   * @param lastRow a buffer whose first {@code bytes} are this rank's last row
   * @param above receives the last row of the rank above (rank - 1)
   * @param below receives the first row of the rank below (rank + 1)
   * @param bytes the bytes of one row
   * @param up the rank above, or -1 at the top of the domain
   * @param down the rank below, or -1 at its bottom
   * @param <B> a device buffer
   */
  record Halo<B>(B firstRow, B lastRow, B above, B below, long bytes, int up, int down) {
    /** The tag of a row sent to the rank above. */
    static final int TAG_UP = 4301;
    /** The tag of a row sent to the rank below. */
    static final int TAG_DOWN = 4302;
  }
}
