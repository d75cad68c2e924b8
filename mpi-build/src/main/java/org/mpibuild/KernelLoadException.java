package org.mpibuild;

import java.util.Map;

/**
 * One or more ranks could not load the binary they received. Every rank throws this exception, naming
 * the ranks that failed and their reasons, and no rank keeps a kernel.
 */
public class KernelLoadException extends KernelBuildException {
  private static final long serialVersionUID = 1L;
  private final transient Map<Integer, String> failures;

  /**
   * Creates a load failure report.
   *
   * @param message the full report, for a person
   * @param failures the reason of each rank that failed, by rank
   */
  public KernelLoadException(String message, Map<Integer, String> failures) {
    super(message);
    this.failures = Map.copyOf(failures);
  }

  /**
   * Returns the reason of each rank that failed.
   *
   * @return an unmodifiable map from rank to reason
   */
  public Map<Integer, String> failures() {
    return failures;
  }
}
