package org.mpibuild.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * Pins the text of the benchmark's {@code matmulK} programs, whose kernels come from the programs' shared
 * generator (org.mpibuild.programs.TiledMatmul): byte for byte the text the benchmark built before the
 * generator was shared (captured from Programs as it was, issue 42), for the programs the benchmark runs:
 * matmul4 (make bench, the quick comparison) in full, matmul24 (the full comparison) and matmul48 (the scale
 * model's compile figure) by length and SHA-256. A change here changes what every published figure compiled.
 */
class ProgramsTest {
  @Test
  void matmul4IsTheSameText() {
    assertEquals(MATMUL4, Programs.matmul(4));
    assertEquals(MATMUL4, Programs.byName("matmul4").source());
  }

  @Test
  void matmul24And48AreTheSameText() throws Exception {
    assertSame(18126, "eee5c85399c646451cec101f83fbff5ed6312b3d40609623aa1b5f4336268725", Programs.matmul(24));
    assertSame(36262, "76ac5290b277473355d0d0f4faa8e6651ff386da5d003ed6a761419e1842889c", Programs.matmul(48));
  }

  @Test
  void eachProgramStartsWithTheSmallerOnes() {
    assertEquals("", Programs.matmul(0));
    assertEquals(Programs.matmul(4), Programs.matmul(24).substring(0, MATMUL4.length()));
  }

  private static void assertSame(int length, String sha256, String text) throws Exception {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    assertEquals(length, bytes.length, "length");
    assertEquals(sha256, HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes)), "SHA-256");
  }

  static final String MATMUL4 = """
      __kernel void mm_0(const int n, const float alpha, const float beta,
          __global const float* A, __global const float* B, __global float* C) {
        __local float As[4][4];
        __local float Bs[4][4];
        int lr = get_local_id(0), lc = get_local_id(1);
        int row = get_group_id(0) * 4 + lr, col = get_group_id(1) * 4 + lc;
        float acc = 0.0f;
        for (int kt = 0; kt < n; kt += 4) {
          As[lr][lc] = (row < n && kt + lc < n) ? A[row * n + kt + lc] : 0.0f;
          Bs[lr][lc] = (col < n && kt + lr < n) ? B[(kt + lr) * n + col] : 0.0f;
          barrier(CLK_LOCAL_MEM_FENCE);
          #pragma unroll 1
          for (int i = 0; i < 4; i++) acc = fma(As[lr][i], Bs[i][lc], acc);
          barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (row < n && col < n) C[row * n + col] = acc;
      }
      __kernel void mm_1(const int n, const float alpha, const float beta,
          __global const float* A, __global const float* B, __global float* C) {
        __local float As[8][8];
        __local float Bs[8][8];
        int lr = get_local_id(0), lc = get_local_id(1);
        int row = get_group_id(0) * 8 + lr, col = get_group_id(1) * 8 + lc;
        float acc = 0.0f;
        for (int kt = 0; kt < n; kt += 8) {
          As[lr][lc] = (row < n && kt + lc < n) ? A[row * n + kt + lc] : 0.0f;
          Bs[lr][lc] = (col < n && kt + lr < n) ? B[(kt + lr) * n + col] : 0.0f;
          barrier(CLK_LOCAL_MEM_FENCE);
          #pragma unroll 1
          for (int i = 0; i < 8; i++) acc = fma(As[lr][i], Bs[i][lc], acc);
          barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (row < n && col < n) C[row * n + col] = alpha * acc + beta * C[row * n + col];
      }
      __kernel void mm_2(const int n, const float alpha, const float beta,
          __global const float* A, __global const float* B, __global float* C) {
        __local float As[16][16];
        __local float Bs[16][16];
        int lr = get_local_id(0), lc = get_local_id(1);
        int row = get_group_id(0) * 16 + lr, col = get_group_id(1) * 16 + lc;
        float acc = 0.0f;
        for (int kt = 0; kt < n; kt += 16) {
          As[lr][lc] = (row < n && kt + lc < n) ? A[row * n + kt + lc] : 0.0f;
          Bs[lr][lc] = (col < n && kt + lr < n) ? B[(kt + lr) * n + col] : 0.0f;
          barrier(CLK_LOCAL_MEM_FENCE);
          #pragma unroll 1
          for (int i = 0; i < 16; i++) acc = fma(As[lr][i], Bs[i][lc], acc);
          barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (row < n && col < n) C[row * n + col] = fmax(acc, 0.0f);
      }
      __kernel void mm_3(const int n, const float alpha, const float beta,
          __global const float* A, __global const float* B, __global float* C) {
        __local float As[4][4];
        __local float Bs[4][4];
        int lr = get_local_id(0), lc = get_local_id(1);
        int row = get_group_id(0) * 4 + lr, col = get_group_id(1) * 4 + lc;
        float acc = 0.0f;
        for (int kt = 0; kt < n; kt += 4) {
          As[lr][lc] = (row < n && kt + lc < n) ? A[row * n + kt + lc] : 0.0f;
          Bs[lr][lc] = (col < n && kt + lr < n) ? B[(kt + lr) * n + col] : 0.0f;
          barrier(CLK_LOCAL_MEM_FENCE);
          #pragma unroll 2
          for (int i = 0; i < 4; i++) acc = fma(As[lr][i], Bs[i][lc], acc);
          barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (row < n && col < n) C[row * n + col] = tanh(alpha * acc);
      }
      """;
}
