package org.mpibuild.examples.cg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class HostCgTest {
  private static final Stopping TIGHT = new Stopping(1e-12, 1, 10_000);

  /** The residual falls below the tolerance, and r really is b - A x (not only the recursion's r). */
  @Test
  void convergesToTheDiscreteSolution() {
    Poisson problem = new Poisson(24, 17);
    HostCg.Result result = HostCg.solve(problem, TIGHT);
    assertTrue(result.residual() <= 1e-12, "residual " + result.residual());
    double[] ax = new double[result.x().length];
    HostCg.apply(result.x(), ax, problem.nx(), problem.ny());
    double[] b = problem.rhsRows(0, problem.ny());
    double rr = 0;
    for (int k = 0; k < b.length; k++) {
      rr += (b[k] - ax[k]) * (b[k] - ax[k]);
    }
    assertTrue(Math.sqrt(rr / HostCg.dot(b, b)) < 1e-10, "true residual " + Math.sqrt(rr / HostCg.dot(b, b)));
  }

  /**
   * The 5-point stencil is second order: the error against the manufactured solution falls about four times when
   * the spacing halves (between 3.5 and 4.5 times), on square grids and on a grid twice as tall as wide.
   */
  @Test
  void theErrorAgainstTheExactSolutionFallsFourfoldPerRefinement() {
    for (int tall : new int[] {1, 2}) {
      double previous = Double.NaN;
      for (int n : new int[] {15, 31, 63}) {
        Poisson problem = new Poisson(n, tall * (n + 1) - 1);
        double error = problem.maxError(HostCg.solve(problem, TIGHT).x(), 0);
        if (!Double.isNaN(previous)) {
          double ratio = previous / error;
          assertTrue(ratio > 3.5 && ratio < 4.5, "n " + n + ", tall " + tall + ": error " + error + ", ratio " + ratio);
        }
        previous = error;
      }
    }
  }

  /** CG on an SPD system in exact arithmetic ends in at most n steps: on a 3 × 2 grid, 6 iterations reach 1e-14. */
  @Test
  void aTinyGridConvergesInAtMostItsSizeIterations() {
    HostCg.Result result = HostCg.solve(new Poisson(3, 2), new Stopping(1e-13, 1, 100));
    assertTrue(result.iterations() <= 6, "iterations " + result.iterations());
  }

  /** Only checked iterations stop it: checking every 7th, it stops at a multiple of 7, later than checking each. */
  @Test
  void itStopsOnlyWhereItChecks() {
    Poisson problem = new Poisson(20, 20);
    HostCg.Result each = HostCg.solve(problem, new Stopping(1e-8, 1, 10_000));
    HostCg.Result seventh = HostCg.solve(problem, new Stopping(1e-8, 7, 10_000));
    assertEquals(0, seventh.iterations() % 7);
    assertTrue(seventh.iterations() >= each.iterations() && seventh.iterations() < each.iterations() + 7,
        each.iterations() + " then " + seventh.iterations());
    for (int i = 0; i <= each.iterations(); i++) {
      assertEquals(each.history()[i], seventh.history()[i], "the same iterations");
    }
  }

  /** A tolerance of 0 runs exactly the most iterations allowed. */
  @Test
  void toleranceZeroRunsMaxIterations() {
    assertEquals(37, HostCg.solve(new Poisson(30, 30), new Stopping(0, 10, 37)).iterations());
  }
}
