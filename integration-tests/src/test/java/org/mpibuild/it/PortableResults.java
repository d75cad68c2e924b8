package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The RESULT lines of {@code org.mpibuild.programs.Portable}, and the checks that every test running it makes
 * (FfmIT on this machine, MatrixIT in every cell of the version matrix): each scenario on every rank.
 */
final class PortableResults {
  private static final Pattern RESULT = Pattern.compile(
      "^(?:\\[(\\d+)\\] )?RESULT scenario=(\\S+) rank=(\\d+) size=(\\d+) outcome=(\\S+) verified=(\\S+) binding=(\\S+) message=(.*)$");

  /** The scenarios Portable runs, in order. */
  static final List<String> SCENARIOS = List.of("success", "compile-failure", "mismatch", "batch", "async");

  record Result(String scenario, int rank, int size, String outcome, boolean verified, String binding, String message) {}

  private PortableResults() {}

  /** The results of one scenario of a job of {@code ranks} ranks, by rank; fails unless every rank reported. */
  static Map<Integer, Result> of(List<String> lines, String scenario, int ranks) {
    Map<Integer, Result> out = new TreeMap<>();
    for (String line : lines) {
      Matcher m = RESULT.matcher(line);
      if (m.matches() && m.group(2).equals(scenario) && Integer.parseInt(m.group(4)) == ranks) {
        out.put(Integer.parseInt(m.group(3)), new Result(m.group(2), Integer.parseInt(m.group(3)),
            Integer.parseInt(m.group(4)), m.group(5), Boolean.parseBoolean(m.group(6)), m.group(7), m.group(8)));
      }
    }
    assertEquals(ranks, out.size(), "every one of " + ranks + " ranks reports " + scenario + ":\n"
        + String.join("\n", lines));
    return out;
  }

  /**
   * Checks a job's every scenario on every rank: the kernel built once, loaded and run correctly everywhere;
   * the compiler's error the same on every rank; a mismatch refused on every rank (when there are two or more);
   * a batch of 4 compiled once each and run everywhere; an asynchronous build run everywhere. Every rank was
   * carried by a binding whose description starts with {@code binding}.
   */
  static void check(List<String> lines, int ranks, String binding) {
    for (String scenario : SCENARIOS) {
      for (Result r : of(lines, scenario, ranks).values()) {
        assertTrue(r.binding().startsWith(binding), "carried by " + binding + ": " + r);
      }
    }
    for (Result r : of(lines, "success", ranks).values()) {
      assertEquals("ok", r.outcome(), r.toString());
      assertTrue(r.verified(), "rank " + r.rank() + " ran the kernel and checked it: " + r);
    }
    Map<Integer, Result> failed = of(lines, "compile-failure", ranks);
    for (Result r : failed.values()) {
      assertEquals("CompileException", r.outcome(), r.toString());
      assertEquals(failed.get(0).message(), r.message(), "the same message on every rank");
    }
    for (Result r : of(lines, "mismatch", ranks).values()) {
      assertEquals(ranks > 1 ? "RequestMismatchException" : "ok", r.outcome(), r.toString());
    }
    for (Result r : of(lines, "batch", ranks).values()) {
      assertEquals("ok", r.outcome(), r.toString());
      assertTrue(r.verified(), "4 kernels, each compiled once in the job, run on every rank: " + r);
    }
    for (Result r : of(lines, "async", ranks).values()) {
      assertEquals("ok", r.outcome(), r.toString());
      assertTrue(r.verified(), "the asynchronous build's kernel ran correctly on rank " + r.rank() + ": " + r);
    }
  }
}
