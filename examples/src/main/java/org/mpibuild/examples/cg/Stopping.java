package org.mpibuild.examples.cg;

/**
 * When conjugate gradients stop: at the first iteration {@code it} that is a multiple of {@code checkEvery}
 * (or {@code maxIterations}) where {@code ||r|| / ||b|| <= tolerance}, else after {@code maxIterations}. Only the
 * checked iterations can stop it, so the host reads the residual only there, and every solver that follows
 * this rule runs the same iterations.
 *
 * @param tolerance the relative residual to reach; 0 runs {@code maxIterations} iterations
 * @param checkEvery how many iterations between two reads of the residual
 * @param maxIterations the most iterations
 */
public record Stopping(double tolerance, int checkEvery, int maxIterations) {
  /**
   * Checks the rule.
   *
   * @throws IllegalArgumentException if the tolerance is negative or not a number, or a count is below 1
   */
  public Stopping {
    if (!(tolerance >= 0)) {
      throw new IllegalArgumentException("tolerance " + tolerance + " must be 0 or more");
    }
    if (checkEvery < 1 || maxIterations < 1) {
      throw new IllegalArgumentException("check every " + checkEvery + " of at most " + maxIterations
          + " iterations: both must be 1 or more");
    }
  }

  /** @return whether the host reads the residual after iteration {@code it} (counted from 1) */
  public boolean checks(int it) {
    return it % checkEvery == 0 || it == maxIterations;
  }

  /**
   * Returns whether to stop after iteration {@code it}, given the squared residual norms there and at the start.
   *
   * @param it the iteration just done, counted from 1
   * @param rr its {@code r·r}
   * @param rr0 the first {@code r·r} ({@code b·b}, since x starts at 0)
   * @return whether it stops
   */
  public boolean stops(int it, double rr, double rr0) {
    return it >= maxIterations || checks(it) && relative(rr, rr0) <= tolerance;
  }

  /** @return {@code sqrt(rr / rr0)}, the relative residual; 0 when {@code rr0} is 0 */
  public static double relative(double rr, double rr0) {
    return rr0 == 0 ? 0 : Math.sqrt(rr / rr0);
  }
}
