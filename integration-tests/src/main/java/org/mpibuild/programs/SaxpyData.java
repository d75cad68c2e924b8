package org.mpibuild.programs;

/** The saxpy inputs of one rank, and the host-side check of a device's result, for every backend. */
final class SaxpyData {
  final float a;
  final float[] x;
  final float[] y;

  /** Inputs that depend on {@code rank}, so that each rank checks its own numbers. */
  SaxpyData(int rank, int n) {
    a = rank + 1.5f;
    x = new float[n];
    y = new float[n];
    for (int i = 0; i < n; i++) {
      x[i] = i * 0.5f + rank;
      y[i] = n - i;
    }
  }

  /** Whether {@code out} holds a * x + y, element by element. */
  boolean matches(float[] out) {
    for (int i = 0; i < x.length; i++) {
      float want = a * x[i] + y[i];
      if (Math.abs(out[i] - want) > 1e-4f * Math.max(1f, Math.abs(want))) {
        return false;
      }
    }
    return true;
  }
}
