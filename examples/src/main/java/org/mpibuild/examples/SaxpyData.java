package org.mpibuild.examples;

/** The saxpy inputs of one rank, and the host-side check of a device's result, for every backend. */
public final class SaxpyData {
  public final float a;
  public final float[] x;
  public final float[] y;

  /** Inputs that depend on {@code rank}, so that each rank checks its own numbers. */
  public SaxpyData(int rank, int n) {
    a = rank + 1.5f;
    x = new float[n];
    y = new float[n];
    for (int i = 0; i < n; i++) {
      x[i] = i * 0.5f + rank;
      y[i] = n - i;
    }
  }

  /** Whether {@code out} holds a * x + y, element by element. */
  public boolean matches(float[] out) {
    for (int i = 0; i < x.length; i++) {
      float want = a * x[i] + y[i];
      if (Math.abs(out[i] - want) > 1e-4f * Math.max(1f, Math.abs(want))) {
        return false;
      }
    }
    return true;
  }
}
