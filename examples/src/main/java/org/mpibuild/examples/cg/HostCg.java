package org.mpibuild.examples.cg;

import java.util.Arrays;

/**
 * The serial, double-precision reference: conjugate gradients on the whole grid on the host, step for step the
 * algorithm the device solver runs on its rows ({@link CgKernels}), with the same guards against a zero divisor
 * and the same {@link Stopping} rule. Its residual history is what the distributed solver must reproduce.
 */
public final class HostCg {
  private HostCg() {}

  /**
   * The outcome of a solve.
   *
   * @param x the solution, row after row
   * @param history {@code r·r} before the first iteration and after each one ({@code iterations + 1} values)
   */
  public record Result(double[] x, double[] history) {
    /** @return how many iterations ran */
    public int iterations() {
      return history.length - 1;
    }

    /** @return the last relative residual {@code ||r|| / ||b||} */
    public double residual() {
      return Stopping.relative(history[history.length - 1], history[0]);
    }
  }

  /**
   * Solves {@code problem} from {@code x = 0}.
   *
   * @param problem the grid and right-hand side
   * @param stopping when to stop
   * @return the solution and residual history
   */
  public static Result solve(Poisson problem, Stopping stopping) {
    int nx = problem.nx();
    int ny = problem.ny();
    double[] x = new double[nx * ny];
    double[] r = problem.rhsRows(0, ny);
    double[] p = r.clone();
    double[] ap = new double[x.length];
    double[] history = new double[stopping.maxIterations() + 1];
    double rr = dot(r, r);
    history[0] = rr;
    int it = 0;
    do {
      it++;
      apply(p, ap, nx, ny);
      double pap = dot(p, ap);
      double alpha = pap != 0 ? rr / pap : 0;
      for (int k = 0; k < x.length; k++) {
        x[k] += alpha * p[k];
        r[k] -= alpha * ap[k];
      }
      double rrNew = dot(r, r);
      history[it] = rrNew;
      double beta = rr != 0 ? rrNew / rr : 0;
      for (int k = 0; k < x.length; k++) {
        p[k] = r[k] + beta * p[k];
      }
      rr = rrNew;
    } while (!stopping.stops(it, rr, history[0]));
    return new Result(x, Arrays.copyOf(history, it + 1));
  }

  /** {@code ap = A p}: the 5-point stencil, zero outside the grid. */
  static void apply(double[] p, double[] ap, int nx, int ny) {
    for (int j = 0; j < ny; j++) {
      for (int i = 0; i < nx; i++) {
        int k = j * nx + i;
        double up = j > 0 ? p[k - nx] : 0;
        double down = j < ny - 1 ? p[k + nx] : 0;
        double left = i > 0 ? p[k - 1] : 0;
        double right = i < nx - 1 ? p[k + 1] : 0;
        ap[k] = 4 * p[k] - up - down - left - right;
      }
    }
  }

  static double dot(double[] a, double[] b) {
    double s = 0;
    for (int k = 0; k < a.length; k++) {
      s += a[k] * b[k];
    }
    return s;
  }
}
