package org.mpibuild.bench;

import java.util.ArrayList;
import java.util.List;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;
import org.mpibuild.examples.Saxpy;

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
   * needs its own code generation (the field notes measured 24 such kernels at about 11 s with PoCL).
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
      sb.append("__kernel void mm_").append(k).append("(const int n, const float alpha, const float beta,\n")
          .append("    __global const float* A, __global const float* B, __global float* C) {\n")
          .append("  __local float As[").append(t).append("][").append(t).append("];\n")
          .append("  __local float Bs[").append(t).append("][").append(t).append("];\n")
          .append("  int lr = get_local_id(0), lc = get_local_id(1);\n")
          .append("  int row = get_group_id(0) * ").append(t).append(" + lr, col = get_group_id(1) * ").append(t)
          .append(" + lc;\n")
          .append("  float acc = 0.0f;\n")
          .append("  for (int kt = 0; kt < n; kt += ").append(t).append(") {\n")
          .append("    As[lr][lc] = (row < n && kt + lc < n) ? A[row * n + kt + lc] : 0.0f;\n")
          .append("    Bs[lr][lc] = (col < n && kt + lr < n) ? B[(kt + lr) * n + col] : 0.0f;\n")
          .append("    barrier(CLK_LOCAL_MEM_FENCE);\n")
          .append("    #pragma unroll ").append(unroll).append("\n")
          .append("    for (int i = 0; i < ").append(t).append("; i++) acc = fma(As[lr][i], Bs[i][lc], acc);\n")
          .append("    barrier(CLK_LOCAL_MEM_FENCE);\n")
          .append("  }\n")
          .append("  if (row < n && col < n) C[row * n + col] = ").append(epilogue).append(";\n")
          .append("}\n");
    }
    return sb.toString();
  }
}
