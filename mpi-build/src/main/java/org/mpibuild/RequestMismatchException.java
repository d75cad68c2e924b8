package org.mpibuild;

import java.util.List;
import java.util.Map;

/**
 * The ranks of a collective build did not ask for the same thing: different sources, options, kernel
 * names, backends or roots. Every rank throws this exception, naming the same ranks.
 */
public class RequestMismatchException extends KernelBuildException {
  private static final long serialVersionUID = 1L;
  private final transient Map<Integer, List<String>> differingRanks;

  /**
   * Creates a mismatch report.
   *
   * @param message the full report, for a person
   * @param differingRanks for each rank that differs from the reference rank, the fields that differ
   */
  public RequestMismatchException(String message, Map<Integer, List<String>> differingRanks) {
    super(message);
    this.differingRanks = Map.copyOf(differingRanks);
  }

  /**
   * Returns the ranks that differ from the reference rank, each with the names of the fields that differ
   * ({@code source}, {@code options}, {@code kernels}, {@code backend}, {@code root}).
   *
   * @return an unmodifiable map from rank to field names
   */
  public Map<Integer, List<String>> differingRanks() {
    return differingRanks;
  }
}
