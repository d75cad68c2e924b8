package org.mpibuild.programs;

/**
 * The OpenCL source of one tiled matrix-multiply kernel: each work-group of tile x tile work-items loads a
 * tile of A and one of B into local memory per step along n, and each work-item accumulates its element of C.
 * The one generator of the tiled kernels that {@link FinishedCode} builds and the benchmark's {@code matmulK}
 * programs (org.mpibuild.bench.Programs) are made of; each caller's text stays as it was, byte for byte.
 */
public final class TiledMatmul {
  private TiledMatmul() {}

  /**
   * {@code __kernel void NAME(const int n, A, B, C)}: C = A B where n is a multiple of {@code tile} and the
   * global size is n x n (no bounds checks; row and column are the global ids).
   */
  public static String plain(String name, int tile) {
    return kernel(name, tile, false, 0, "acc");
  }

  /**
   * {@code __kernel void NAME(const int n, const float alpha, const float beta, A, B, C)}: C = {@code epilogue}
   * (an expression of {@code acc}, {@code alpha}, {@code beta} and C's element) for any n, tiles read as zeros
   * past the edges, the inner loop an {@code fma} under {@code #pragma unroll UNROLL}.
   */
  public static String guarded(String name, int tile, int unroll, String epilogue) {
    return kernel(name, tile, true, unroll, epilogue);
  }

  private static String kernel(String name, int tile, boolean guarded, int unroll, String epilogue) {
    String t = Integer.toString(tile);
    StringBuilder sb = new StringBuilder();
    sb.append("__kernel void ").append(name);
    if (guarded) {
      sb.append("(const int n, const float alpha, const float beta,\n")
          .append("    __global const float* A, __global const float* B, __global float* C) {\n")
          .append("  __local float As[").append(t).append("][").append(t).append("];\n")
          .append("  __local float Bs[").append(t).append("][").append(t).append("];\n");
    } else {
      sb.append("(const int n, __global const float* A,\n")
          .append("    __global const float* B, __global float* C) {\n")
          .append("  __local float As[").append(t).append("][").append(t).append("], Bs[").append(t).append("][")
          .append(t).append("];\n");
    }
    sb.append("  int lr = get_local_id(0), lc = get_local_id(1);\n");
    if (guarded) {
      sb.append("  int row = get_group_id(0) * ").append(t).append(" + lr, col = get_group_id(1) * ").append(t)
          .append(" + lc;\n");
    } else {
      sb.append("  int row = get_global_id(0), col = get_global_id(1);\n");
    }
    sb.append("  float acc = 0.0f;\n")
        .append("  for (int kt = 0; kt < n; kt += ").append(t).append(") {\n");
    if (guarded) {
      sb.append("    As[lr][lc] = (row < n && kt + lc < n) ? A[row * n + kt + lc] : 0.0f;\n")
          .append("    Bs[lr][lc] = (col < n && kt + lr < n) ? B[(kt + lr) * n + col] : 0.0f;\n");
    } else {
      sb.append("    As[lr][lc] = A[row * n + kt + lc];\n")
          .append("    Bs[lr][lc] = B[(kt + lr) * n + col];\n");
    }
    sb.append("    barrier(CLK_LOCAL_MEM_FENCE);\n");
    if (guarded) {
      sb.append("    #pragma unroll ").append(unroll).append("\n");
    }
    sb.append("    for (int i = 0; i < ").append(t).append("; i++) ")
        .append(guarded ? "acc = fma(As[lr][i], Bs[i][lc], acc)" : "acc += As[lr][i] * Bs[i][lc]").append(";\n")
        .append("    barrier(CLK_LOCAL_MEM_FENCE);\n")
        .append("  }\n")
        .append(guarded ? "  if (row < n && col < n) " : "  ").append("C[row * n + col] = ").append(epilogue)
        .append(";\n")
        .append("}\n");
    return sb.toString();
  }
}
