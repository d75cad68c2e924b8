package org.mpibuild.examples.cg;

/**
 * The Poisson problem {@code -Δu = f} on a rectangle with {@code u = 0} on its edges, discretized on a grid of
 * {@code nx × ny} interior points with spacing {@code h = 1 / (nx + 1)} in both directions (the rectangle is
 * {@code [0, 1] × [0, Ly]}, {@code Ly = (ny + 1) h}), with the manufactured solution {@code u = g(x) g(y / Ly)},
 * {@code g(t) = t - t⁴}. (A product of sines would be an eigenvector of the discrete operator, which conjugate
 * gradients solve in one iteration; a polynomial of degree 3 or less would be solved exactly by the stencil.)
 *
 * <p>The discrete system is the 5-point stencil scaled by {@code h²}: {@code 4u(i,j) - u(i±1,j) - u(i,j±1) =
 * h² f(i,j)}, a symmetric positive definite matrix that is never stored. Point {@code (i, j)} (column, row) is
 * element {@code j * nx + i}. The discrete solution differs from the exact one by {@code O(h²)}.
 *
 * @param nx interior points per row
 * @param ny rows of interior points
 */
public record Poisson(int nx, int ny) {
  /**
   * Checks the grid.
   *
   * @throws IllegalArgumentException if a side is below 1, or the grid has more than {@code Integer.MAX_VALUE}
   *     points
   */
  public Poisson {
    if (nx < 1 || ny < 1) {
      throw new IllegalArgumentException("a grid of " + nx + " × " + ny + " points: each side must be 1 or more");
    }
    if ((long) nx * ny > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("a grid of " + nx + " × " + ny + " points is too large");
    }
  }

  /** @return the grid spacing */
  public double h() {
    return 1.0 / (nx + 1);
  }

  private double height() {
    return (ny + 1) * h();
  }

  /** @return the exact solution at point {@code (i, j)} */
  public double exact(int i, int j) {
    return g(x(i)) * g(s(j));
  }

  /**
   * Returns the right-hand side of the discrete system at point {@code (i, j)}: {@code h² f(i, j)}, where
   * {@code f = -Δu = 12x² g(s) + 12s² g(x) / Ly²}.
   *
   * @param i the column
   * @param j the row
   * @return {@code h² f(i, j)}
   */
  public double rhs(int i, int j) {
    double x = x(i);
    double s = s(j);
    double ly = height();
    return h() * h() * 12 * (x * x * g(s) + s * s * g(x) / (ly * ly));
  }

  private double x(int i) {
    return (i + 1) * h();
  }

  private double s(int j) {
    return (j + 1) * h() / height();
  }

  private static double g(double t) {
    return t - t * t * t * t;
  }

  /**
   * Returns the right-hand side on {@code rows} rows from row {@code first}, row after row.
   *
   * @param first the first row
   * @param rows how many rows
   * @return {@code rows * nx} values
   */
  public double[] rhsRows(int first, int rows) {
    double[] b = new double[rows * nx];
    for (int j = 0; j < rows; j++) {
      for (int i = 0; i < nx; i++) {
        b[j * nx + i] = rhs(i, first + j);
      }
    }
    return b;
  }

  /**
   * Returns the largest difference between {@code u}, the values of {@code rows} rows from row {@code first},
   * and the exact solution there.
   *
   * @param u the values, row after row
   * @param first the first row
   * @return the largest absolute difference
   */
  public double maxError(double[] u, int first) {
    double max = 0;
    for (int k = 0; k < u.length; k++) {
      max = Math.max(max, Math.abs(u[k] - exact(k % nx, first + k / nx)));
    }
    return max;
  }
}
