package org.mpibuild.bench;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import mpi.MPI;
import org.mpibuild.BuildStats;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Compilation;
import org.mpibuild.spi.LoadedProgram;

/**
 * The broadcast cost: for each payload size, a raw Java direct-buffer MPI_Bcast (mpi.jar) and mpi-build's
 * envelope broadcast (header, metadata, chunks, SHA-256 check on every receiver), each the slowest rank's
 * time after a barrier. The report puts a plain C MPI_Bcast beside them.
 *
 * <p>usage: BcastBench OUT.jsonl REPS SIZE[,SIZE...]
 */
public final class BcastBench {
  private BcastBench() {}

  /** A "compiler" that returns a prepared payload, so only the broadcast is measured. */
  record Bytes(byte[] payload) implements Backend {
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
      return new Compilation(null, payload, "");
    }

    @Override
    public LoadedProgram load(byte[] binary, List<String> kernelNames) {
      throw new UnsupportedOperationException("the broadcast benchmark loads nothing");
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
    for (String s : args[2].split(",")) {
      int bytes = Integer.parseInt(s);
      ByteBuffer buf = ByteBuffer.allocateDirect(bytes);
      byte[] payload = new byte[bytes];
      for (int i = 0; i < bytes; i += 4096) {
        payload[i] = (byte) i;
      }
      try (MpiBuild mb = MpiBuild.builder().backend(new Bytes(payload)).noCache().build()) {
        for (int r = 0; r < reps; r++) {
          MPI.COMM_WORLD.barrier();
          long t0 = System.nanoTime();
          MPI.COMM_WORLD.bcast(buf, bytes, MPI.BYTE, 0);
          long raw = slowest(System.nanoTime() - t0);
          mb.mpiBuildBinary(KernelSource.of("payload " + r).withKernels("k"), 0);
          BuildStats st = mb.lastStats();
          long envelope = slowest(st.broadcastNanos());
          if (rank == 0) {
            json.append(BenchJson.line("n", size, "bytes", bytes, "rep", r, "java_direct_us",
                BenchJson.round(raw / 1e3, 1), "envelope_us", BenchJson.round(envelope / 1e3, 1)));
          }
        }
      }
    }
    if (rank == 0) {
      Files.writeString(Path.of(args[0]), json.toString());
    }
    MPI.Finalize();
  }

  /** A few untimed rounds, so that both paths run compiled code (SHA-256 intrinsics included). */
  static void warmUp() throws Exception {
    int bytes = 4 << 20;
    ByteBuffer buf = ByteBuffer.allocateDirect(bytes);
    try (MpiBuild mb = MpiBuild.builder().backend(new Bytes(new byte[bytes])).noCache().build()) {
      for (int r = 0; r < 8; r++) {
        MPI.COMM_WORLD.bcast(buf, bytes, MPI.BYTE, 0);
        mb.mpiBuildBinary(KernelSource.of("warm-up " + r).withKernels("k"), 0);
      }
    }
  }

  static long slowest(long mine) throws Exception {
    long[] in = {mine};
    long[] out = new long[1];
    MPI.COMM_WORLD.allReduce(in, out, 1, MPI.LONG, MPI.MAX);
    return out[0];
  }
}
