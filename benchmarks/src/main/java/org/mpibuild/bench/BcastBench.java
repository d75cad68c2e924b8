package org.mpibuild.bench;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import mpi.MPI;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Compilation;
import org.mpibuild.spi.LoadedProgram;

/**
 * The broadcast cost, paired: for each payload size and repetition, a raw Java direct-buffer
 * {@code MPI_Bcast} (mpi.jar) of the bytes and mpi-build's envelope broadcast of the same bytes, in an order
 * that alternates between repetitions, each after a barrier. Per repetition it writes the slowest rank's
 * raw time, the slowest rank's broadcast phase of the collective build (root: sending; receivers: from the
 * header's arrival until every block is checked), and the slowest rank's whole collective call (agreement,
 * the root's copy and digests, broadcast, checks, load agreement). {@code JIT_WARM_UP} untimed calls come
 * first, then an untimed pass over every size, then the timed pass.
 *
 * <p>usage: BcastBench OUT.jsonl REPS SIZE[,SIZE...]
 */
public final class BcastBench {
  static final int WARM_UP = 5;
  /** Calls before any timing, so that both paths run compiled code (SHA-256 and CRC32C intrinsics included). */
  static final int JIT_WARM_UP = 2000;

  private BcastBench() {}

  /** A "compiler" that returns a prepared payload and a "device" that loads in place: only the broadcast costs. */
  public record Bytes(byte[] payload) implements Backend {
    @Override
    public String id() {
      return "bytes";
    }

    @Override
    public String target() {
      return "any";
    }

    @Override
    public Compilation compile(KernelSource request) {
      return new Compilation(load(ByteBuffer.allocateDirect(0), request.kernelNames()), payload, "");
    }

    @Override
    public LoadedProgram load(byte[] binary, List<String> kernelNames) {
      throw new IllegalStateException("the broadcast benchmark loads from direct memory only");
    }

    @Override
    public LoadedProgram load(ByteBuffer binary, List<String> kernelNames) {
      return new LoadedProgram() {
        @Override
        public List<String> kernelNames() {
          return kernelNames;
        }

        @Override
        public void close() {}
      };
    }

    @Override
    public void close() {}
  }

  public static void main(String[] args) throws Exception {
    MPI.Init(args);
    int rank = MPI.COMM_WORLD.getRank();
    int size = MPI.COMM_WORLD.getSize();
    int reps = Integer.parseInt(args[1]);
    StringBuilder json = new StringBuilder();
    warmUp();
    // Two passes over the sizes: the first untimed, so that every path is compiled before any timing.
    for (int pass = 0; pass < 2; pass++) {
      for (String s : args[2].split(",")) {
        int bytes = Integer.parseInt(s);
        sizeRuns(bytes, pass == 0 ? warmUps(bytes) : reps, pass == 0 ? null : json, rank, size);
      }
    }
    if (rank == 0) {
      Files.writeString(Path.of(args[0]), json.toString());
    }
    MPI.Finalize();
  }

  /** Untimed repetitions of a size in the first pass: more for small sizes, whose calls are cheap. */
  static int warmUps(int bytes) {
    return (int) Math.max(WARM_UP, Math.min(50, (64L << 20) / Math.max(1, bytes)));
  }

  /** {@code reps} paired repetitions at one size; written to {@code json} unless it is null (warm-up). */
  static void sizeRuns(int bytes, int reps, StringBuilder json, int rank, int size) throws Exception {
    ByteBuffer buf = ByteBuffer.allocateDirect(bytes);
    byte[] payload = new byte[bytes];
    new Random(bytes).nextBytes(payload);
    if (rank == 0) {
      buf.put(payload).clear();
    }
    try (MpiBuild mb = MpiBuild.builder().backend(new Bytes(payload)).noCache().build()) {
      for (int r = 0; r < reps; r++) {
        long raw = 0;
        long[] envelope = null;
        for (int turn = 0; turn < 2; turn++) {
          if ((turn == 0) == (r % 2 == 0)) {
            raw = rawBroadcast(buf, bytes);
          } else {
            envelope = envelopeBroadcast(mb, r);
          }
        }
        if (rank == 0 && json != null) {
          json.append(BenchJson.line("n", size, "bytes", bytes, "rep", r, "raw_first", r % 2 == 0,
              "java_direct_us", BenchJson.round(raw / 1e3, 1), "envelope_us", BenchJson.round(envelope[0] / 1e3, 1),
              "call_us", BenchJson.round(envelope[1] / 1e3, 1)));
        }
      }
    }
  }

  static void warmUp() throws Exception {
    int bytes = 64 << 10;
    ByteBuffer buf = ByteBuffer.allocateDirect(bytes);
    try (MpiBuild mb = MpiBuild.builder().backend(new Bytes(new byte[bytes])).noCache().build()) {
      for (int r = 0; r < JIT_WARM_UP; r++) {
        rawBroadcast(buf, bytes);
        envelopeBroadcast(mb, -1 - r);
      }
    }
  }

  static long rawBroadcast(ByteBuffer buf, int bytes) throws Exception {
    MPI.COMM_WORLD.barrier();
    long t0 = System.nanoTime();
    MPI.COMM_WORLD.bcast(buf, bytes, MPI.BYTE, 0);
    return slowest(System.nanoTime() - t0);
  }

  /** The slowest rank's broadcast phase and whole call, in ns. */
  static long[] envelopeBroadcast(MpiBuild mb, int rep) throws Exception {
    MPI.COMM_WORLD.barrier();
    long t0 = System.nanoTime();
    long phase;
    try (Kernel k = mb.mpiBuildKernel(KernelSource.of("payload " + rep).withKernels("k"), 0)) {
      phase = k.stats().broadcastNanos();
    }
    long call = System.nanoTime() - t0;
    return new long[] {slowest(phase), slowest(call)};
  }

  static long slowest(long mine) throws Exception {
    long[] in = {mine};
    long[] out = new long[1];
    MPI.COMM_WORLD.allReduce(in, out, 1, MPI.LONG, MPI.MAX);
    return out[0];
  }
}
