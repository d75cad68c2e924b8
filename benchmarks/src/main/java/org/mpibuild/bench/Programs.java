package org.mpibuild.bench;

import java.util.ArrayList;
import java.util.List;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;
import org.mpibuild.examples.Saxpy;
import org.mpibuild.programs.TiledMatmul;

/** The kernel programs the benchmark builds: a one-liner and programs of many tiled matrix kernels. */
final class Programs {
  private Programs() {}

  /** A program by name: {@code saxpy}, or {@code matmulK} with K kernels. */
  static KernelSource byName(String name) {
    if (name.equals("saxpy")) {
      return KernelSource.of(Saxpy.SOURCE).withKernels("saxpy");
    }
    if (name.startsWith("matmul")) {
      return KernelSource.of(matmul(Integer.parseInt(name.substring("matmul".length()))));
    }
    throw new IllegalArgumentException("unknown benchmark program '" + name + "'");
  }

  /** saxpy's local size: Launch launches it with this one, and the request names it. */
  static final int SAXPY_LOCAL = 64;

  /**
   * The launch shapes of a program, exactly as {@link Launch} launches it at matrix order {@code n}: for
   * {@code matmulK} each {@code mm_k} at tile x tile with global n x n; for saxpy a 1-D launch of n * n
   * work-items at {@link #SAXPY_LOCAL}.
   */
  static List<LaunchShape> shapes(String name, int n) {
    List<LaunchShape> out = new ArrayList<>();
    if (name.equals("saxpy")) {
      out.add(LaunchShape.of("saxpy", SAXPY_LOCAL).withGlobalSize((long) n * n));
      return out;
    }
    int kernels = Integer.parseInt(name.substring("matmul".length()));
    for (int k = 0; k < kernels; k++) {
      out.add(LaunchShape.of("mm_" + k, tile(k), tile(k)).withGlobalSize(n, n));
    }
    return out;
  }

  /** The tile size (and work-group edge) of kernel {@code mm_k}. */
  static int tile(int k) {
    int[] tiles = {4, 8, 16};
    return tiles[k % tiles.length];
  }

  /**
   * K tiled matrix-multiply kernels, each with its own tile size, unrolling and epilogue, so that each
   * needs its own code generation (the field notes measured 24 such kernels at about 11 s with PoCL); the
   * kernels' text is {@link TiledMatmul#guarded}'s.
   */
  static String matmul(int kernels) {
    StringBuilder sb = new StringBuilder();
    for (int k = 0; k < kernels; k++) {
      int t = tile(k);
      int unroll = 1 + (k / 3) % 4;
      String epilogue = switch (k % 4) {
        case 0 -> "acc";
        case 1 -> "alpha * acc + beta * C[row * n + col]";
        case 2 -> "fmax(acc, 0.0f)";
        default -> "tanh(alpha * acc)";
      };
      sb.append(TiledMatmul.guarded("mm_" + k, t, unroll, epilogue));
    }
    return sb.toString();
  }
}
