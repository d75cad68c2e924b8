package org.mpibuild.programs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * Pins the kernel text of the programs whose kernels come from the shared generators ({@link TiledMatmul},
 * {@link SpinDelay}): byte for byte the text each program built before the generators were shared (captured
 * from the programs as they were, issue 42). A change here changes what the integration tests and the GPU check
 * compile.
 */
class KernelTextTest {
  @Test
  void finishedCodeBuildsTheSameTwoTiledKernels() {
    assertEquals(FINISHED_CODE, FinishedCode.source());
  }

  @Test
  void pipelineAdvancesTheTokenAfterTheSameDelay() {
    assertEquals(PIPELINE, Pipeline.SOURCE);
  }

  @Test
  void streamCollectivesDelaysAndVerifiesAsBefore() {
    assertEquals(STREAM_COLLECTIVES, StreamCollectives.SOURCE);
  }

  @Test
  void theDelayIsOneDefinitionInBothPrograms() {
    assertEquals(1, count(Pipeline.SOURCE, SpinDelay.BODY));
    assertEquals(1, count(StreamCollectives.SOURCE, SpinDelay.BODY));
  }

  private static int count(String text, String part) {
    int n = 0;
    for (int at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + 1)) {
      n++;
    }
    return n;
  }

  static final String FINISHED_CODE = """
      __kernel void mm8(const int n, __global const float* A,
          __global const float* B, __global float* C) {
        __local float As[8][8], Bs[8][8];
        int lr = get_local_id(0), lc = get_local_id(1);
        int row = get_global_id(0), col = get_global_id(1);
        float acc = 0.0f;
        for (int kt = 0; kt < n; kt += 8) {
          As[lr][lc] = A[row * n + kt + lc];
          Bs[lr][lc] = B[(kt + lr) * n + col];
          barrier(CLK_LOCAL_MEM_FENCE);
          for (int i = 0; i < 8; i++) acc += As[lr][i] * Bs[i][lc];
          barrier(CLK_LOCAL_MEM_FENCE);
        }
        C[row * n + col] = acc;
      }
      __kernel void mm16(const int n, __global const float* A,
          __global const float* B, __global float* C) {
        __local float As[16][16], Bs[16][16];
        int lr = get_local_id(0), lc = get_local_id(1);
        int row = get_global_id(0), col = get_global_id(1);
        float acc = 0.0f;
        for (int kt = 0; kt < n; kt += 16) {
          As[lr][lc] = A[row * n + kt + lc];
          Bs[lr][lc] = B[(kt + lr) * n + col];
          barrier(CLK_LOCAL_MEM_FENCE);
          for (int i = 0; i < 16; i++) acc += As[lr][i] * Bs[i][lc];
          barrier(CLK_LOCAL_MEM_FENCE);
        }
        C[row * n + col] = acc;
      }
      """;

  static final String PIPELINE = """
      __kernel void advance(__global int* token, const int add, const int spin, __global uint* sink) {
        int i = get_global_id(0);
        uint x = (uint) i;
        for (int k = 0; k < spin; k++) { x = x * 1103515245u + 12345u; }
        sink[i] = x;
        token[i] += add;
      }
      """;

  static final String STREAM_COLLECTIVES = """
      __kernel void delay(int spin, __global uint* sink) {
        int i = get_global_id(0);
        uint x = (uint) i;
        for (int k = 0; k < spin; k++) { x = x * 1103515245u + 12345u; }
        sink[i] = x;
      }
      __kernel void verify(__global const int* buf, int base, __global int* errors) {
        int i = get_global_id(0);
        if (buf[i] != base * (i + 1)) { atomic_inc(errors); }
      }
      """;
}
