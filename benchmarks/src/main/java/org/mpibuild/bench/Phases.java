package org.mpibuild.bench;

import java.util.List;

/**
 * Where a rank's time in a cell went. Every strategy times these phases on every rank, inside the timed
 * region; what a strategy cannot split stays in the phase that holds it (docs/benchmarks.md says which),
 * and what no phase holds is "other": the rank's time minus the sum of its phases.
 */
final class Phases {
  /** Device context, cache or directory set-up, and the agreement between ranks. */
  static final int SETUP = 0;
  /** The compiler: the front end, or the whole compile where code generation cannot be split from it. */
  static final int COMPILE = 1;
  /** Generic machine code, made by reading the program binary (PoCL), where it can be timed on its own. */
  static final int CODEGEN = 2;
  /** Backoff for another rank: polling a lock, or a receiver waiting for the root to send. */
  static final int WAIT = 3;
  /** Moving the binary: an MPI broadcast, or writing and reading the shared file. */
  static final int BROADCAST = 4;
  /** Loading the binary into this rank's device. */
  static final int LOAD = 5;
  /** Every kernel's first launch and its finish (with PoCL: code for a shape the binary lacks). */
  static final int LAUNCH = 6;

  /** The phases' names in results.json and the chart, by index; "other" comes after them. */
  static final List<String> NAMES = List.of("setup", "compile", "codegen", "wait", "broadcast", "load", "launch");
  static final int COUNT = NAMES.size();
  /** Per rank in the gathered array: the rank's time, its phases, 1 if it received the binary. */
  static final int WIDTH = COUNT + 2;

  private Phases() {}

  /**
   * The slowest rank's phases (the one whose time is the cell's time) and the slowest receiver's load
   * plus first launch.
   *
   * @param slowestRank the rank with the largest time (the lowest such rank on a tie)
   * @param nanos that rank's phases, then "other": its time minus the sum of its phases
   * @param receiverReadyNanos over the ranks that loaded a binary another rank made, the largest load +
   *     first launch; -1 when no rank did
   */
  record Slowest(int slowestRank, long[] nanos, long receiverReadyNanos) {}

  /**
   * Reads an all-gathered array of {@link #WIDTH} longs per rank: time, the {@link #COUNT} phases, and 1
   * for a receiver.
   */
  static Slowest slowest(long[] gathered) {
    if (gathered.length == 0 || gathered.length % WIDTH != 0) {
      throw new IllegalArgumentException("expected " + WIDTH + " values per rank, got " + gathered.length);
    }
    int ranks = gathered.length / WIDTH;
    int slow = 0;
    long receiver = -1;
    for (int r = 0; r < ranks; r++) {
      if (gathered[r * WIDTH] > gathered[slow * WIDTH]) {
        slow = r;
      }
      if (gathered[r * WIDTH + COUNT + 1] != 0) {
        receiver = Math.max(receiver, gathered[r * WIDTH + 1 + LOAD] + gathered[r * WIDTH + 1 + LAUNCH]);
      }
    }
    long[] out = new long[COUNT + 1];
    long sum = 0;
    for (int p = 0; p < COUNT; p++) {
      out[p] = gathered[slow * WIDTH + 1 + p];
      sum += out[p];
    }
    out[COUNT] = gathered[slow * WIDTH] - sum;
    return new Slowest(slow, out, receiver);
  }
}
