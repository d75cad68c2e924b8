package org.mpibuild.bench;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.mpibuild.spi.Communicator;

/**
 * The Java side of the FFM binding's benchmark on one MPI (BenchReport's ffm-abi mode): what {@code
 * abi_bench.c} measures in C, through the library's MPI interface on the binding {@code MPI_BUILD_BINDING}
 * names (the FFM binding, with the standard ABI or the implementation's tables as {@code MPI_BUILD_MPI_ABI}
 * says). Warm-up first, so that steady-state calls are compared (C has no JIT to warm).
 *
 * <pre>mpirun -np 2 ... FfmAbiBench REPS BYTES...</pre> prints on rank 0 the same lines as the C program:
 * {@code bcast bytes=B median_us=M} per size, then {@code pingpong bytes=8 median_half_rtt_us=M}, and
 * {@code binding DESCRIPTION}.
 */
public final class FfmAbiBench {
  private FfmAbiBench() {}

  public static void main(String[] args) {
    int reps = Integer.parseInt(args[0]);
    try (Communicator comm = FfmBcastBench.openWorld()) {
      if (comm.size() < 2) {
        throw new IllegalStateException("FfmAbiBench needs 2 ranks, not " + comm.size());
      }
      int rank = comm.rank();
      FfmBcastBench.warmUp(comm);
      for (int a = 1; a < args.length; a++) {
        int bytes = Integer.parseInt(args[a]);
        double median = FfmBcastBench.broadcastMedianMicros(comm, ByteBuffer.allocateDirect(bytes), reps);
        if (rank == 0) {
          System.out.printf(Locale.ROOT, "bcast bytes=%d median_us=%.2f%n", bytes, median);
        }
      }
      // 8-byte ping-pong between ranks 0 and 1: 10^4 round trips to warm the JIT, then REPS batches of 1000.
      ByteBuffer msg = ByteBuffer.allocateDirect(8);
      pingPong(comm, msg, 10_000);
      List<Double> halfRoundTrips = new ArrayList<>();
      for (int r = 0; r < reps; r++) {
        comm.allReduceMax(new int[] {0});
        long t0 = System.nanoTime();
        pingPong(comm, msg, 1000);
        halfRoundTrips.add((System.nanoTime() - t0) / 2000.0 / 1000.0);
      }
      if (rank == 0) {
        System.out.printf(Locale.ROOT, "pingpong bytes=8 median_half_rtt_us=%.3f%n", Stats.median(halfRoundTrips));
        System.out.println("binding " + comm.description().replace(' ', '_'));
      }
    }
  }

  static void pingPong(Communicator comm, ByteBuffer msg, int rounds) {
    int rank = comm.rank();
    for (int i = 0; i < rounds; i++) {
      if (rank == 0) {
        comm.send(msg.clear(), 1, 7);
        comm.receive(msg.clear(), 1, 7);
      } else if (rank == 1) {
        comm.receive(msg.clear(), 0, 7);
        comm.send(msg.clear(), 0, 7);
      }
    }
  }

}
