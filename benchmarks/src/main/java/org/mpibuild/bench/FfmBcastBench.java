package org.mpibuild.bench;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.mpibuild.programs.ProgramWorld;
import org.mpibuild.spi.Communicator;

/**
 * {@code MPI_Bcast} through the library's MPI interface on the binding {@code MPI_BUILD_BINDING} names
 * (default {@code ffm}, which needs JDK 22+), timed as {@code bcast.c} times the C call: a synchronizing all-reduce,
 * then the broadcast of a direct buffer, the slowest rank's time, the median of REPS, after 2000 small
 * broadcasts that warm up the JIT (C has none to warm; steady-state calls are compared).
 *
 * <pre>mpirun -np N ... FfmBcastBench BYTES REPS</pre> prints, on rank 0,
 * {@code bcast bytes=B ranks=N median_us=M binding=...}
 */
public final class FfmBcastBench {
  private FfmBcastBench() {}

  public static void main(String[] args) {
    int bytes = Integer.parseInt(args[0]);
    int reps = Integer.parseInt(args[1]);
    try (Communicator comm = openWorld()) {
      warmUp(comm);
      double median = broadcastMedianMicros(comm, ByteBuffer.allocateDirect(bytes), reps);
      if (comm.rank() == 0) {
        System.out.printf(Locale.ROOT, "bcast bytes=%d ranks=%d median_us=%.1f binding=%s%n", bytes, comm.size(),
            median, comm.description().replace(' ', '_'));
      }
    }
  }

  /** The world communicator of the binding {@code MPI_BUILD_BINDING} names (default {@code ffm}), initializing MPI. */
  static Communicator openWorld() {
    return ProgramWorld.openBinding(System.getenv().getOrDefault("MPI_BUILD_BINDING", "ffm"));
  }

  /** Warms up the JIT on the call path (C has none to warm): steady-state calls are what is compared. */
  static void warmUp(Communicator comm) {
    ByteBuffer small = ByteBuffer.allocateDirect(8);
    for (int i = 0; i < 2000; i++) {
      comm.allReduceMax(new int[] {0});
      comm.broadcast(small, 0);
    }
  }

  /**
   * The median over {@code reps} broadcasts of {@code buffer} from rank 0, each after a synchronizing
   * all-reduce, of the slowest rank's time, in microseconds (to 0.01 us); the same on every rank.
   */
  static double broadcastMedianMicros(Communicator comm, ByteBuffer buffer, int reps) {
    comm.broadcast(buffer, 0);
    List<Double> times = new ArrayList<>();
    for (int r = 0; r < reps; r++) {
      comm.allReduceMax(new int[] {0});
      long t0 = System.nanoTime();
      comm.broadcast(buffer, 0);
      int hundredthsOfUs = (int) Math.min(Integer.MAX_VALUE, (System.nanoTime() - t0) / 10);
      times.add(comm.allReduceMax(new int[] {hundredthsOfUs})[0] / 100.0);
    }
    return Stats.median(times);
  }
}
