package org.mpibuild.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code make bench-publish}: puts the last run's results where the docs show them: the JSON and the charts
 * under docs/, the tables and the {@code bench:} line, made again from that JSON, between the markers of
 * docs/benchmarks.md, and the {@code bench:} line between the README's. With {@code tables}, only the text
 * is made again, from the docs/bench-results.json already there. A test checks that both pages' figures
 * are exactly those the JSON gives.
 *
 * <p>usage: Publish REPO_DIR [tables]
 */
final class Publish {
  static final String BEGIN = "<!-- bench:tables:begin -->";
  static final String END = "<!-- bench:tables:end -->";
  static final String LINE_BEGIN = "<!-- bench:line:begin -->";
  static final String LINE_END = "<!-- bench:line:end -->";
  /** The page that holds the benchmark's reference and tables. */
  static final String PAGE = "docs/benchmarks.md";

  private Publish() {}

  public static void main(String[] args) throws Exception {
    Path repo = Path.of(args[0]);
    boolean textOnly = args.length > 1 && args[1].equals("tables");
    Path bench = repo.resolve("benchmarks/target/bench");
    if (!textOnly) {
      Files.copy(bench.resolve("results.json"), repo.resolve("docs/bench-results.json"), StandardCopyOption.REPLACE_EXISTING);
      Files.copy(bench.resolve("time-to-ready.png"), repo.resolve("docs/bench-time-to-ready.png"),
          StandardCopyOption.REPLACE_EXISTING);
      for (String[] f : new String[][] {{"phases.png", "docs/bench-phases.png"}, {"generic.md", "docs/bench-generic.md"}}) {
        if (Files.exists(bench.resolve(f[0]))) {
          Files.copy(bench.resolve(f[0]), repo.resolve(f[1]), StandardCopyOption.REPLACE_EXISTING);
        }
      }
    }
    String json = Files.readString(repo.resolve("docs/bench-results.json"));
    Path page = repo.resolve(PAGE);
    Files.writeString(page, replaceBetween(Files.readString(page), BEGIN, END, tables(json)));
    Path readme = repo.resolve("README.md");
    Files.writeString(readme, replaceBetween(Files.readString(readme), LINE_BEGIN, LINE_END, line(json)));
    System.out.println("bench-publish: " + (textOnly ? "" : "docs/bench-results.json, docs/bench-time-to-ready.png, "
        + "docs/bench-phases.png, docs/bench-generic.md (when made), ") + PAGE + "'s tables and the README's bench: line");
  }

  /** The README's {@code bench:} line, made from a results.json. */
  static String line(String resultsJson) throws Exception {
    JsonNode root = new ObjectMapper().readTree(resultsJson);
    List<Map<String, String>> cells = texts(root.get("cells"));
    Comparison.Mode mode = mode(root, cells, texts(root.get("broadcast")));
    return "```\n" + BenchLine.line(mode, BenchLine.figures(mode, cells, texts(root.get("broadcast"))))
        + "\n```\n";
  }

  /** The run's mode, as results.json records it. */
  static Comparison.Mode mode(JsonNode root, List<Map<String, String>> cells, List<Map<String, String>> bcasts) {
    List<Integer> ranks = new ArrayList<>();
    cells.forEach(c -> {
      int n = Integer.parseInt(c.get("n"));
      if (!ranks.contains(n)) {
        ranks.add(n);
      }
    });
    ranks.sort(null);
    List<Integer> sizes = new ArrayList<>();
    bcasts.forEach(b -> {
      int s = Integer.parseInt(b.get("bytes"));
      if (!sizes.contains(s)) {
        sizes.add(s);
      }
    });
    int bcastReps = (int) bcasts.stream().filter(b -> b.get("n").equals("4") && b.get("bytes").equals(
        Integer.toString(sizes.get(0)))).count();
    return new Comparison.Mode(root.get("mode").asText(), ranks, root.get("reps").asInt(), root.get("program").asText(),
        sizes, bcastReps);
  }

  /** The README's tables and line, made from a results.json. */
  static String tables(String resultsJson) throws Exception {
    JsonNode root = new ObjectMapper().readTree(resultsJson);
    List<Map<String, String>> cells = texts(root.get("cells"));
    List<Map<String, String>> bcasts = texts(root.get("broadcast"));
    Comparison.Mode mode = mode(root, cells, bcasts);
    int cores = root.get("machine").get("cores").asInt();
    return ComparisonTables.markdown(mode, cells, bcasts, cores) + "\n```\n"
        + BenchLine.line(mode, BenchLine.figures(mode, cells, bcasts)) + "\n```\n";
  }

  static List<Map<String, String>> texts(JsonNode array) {
    List<Map<String, String>> out = new ArrayList<>();
    for (JsonNode o : array) {
      Map<String, String> m = new LinkedHashMap<>();
      o.fields().forEachRemaining(f -> m.put(f.getKey(), f.getValue().asText()));
      out.add(m);
    }
    return out;
  }

  /** {@code text} with what lies between the two markers replaced by {@code body}. */
  static String replaceBetween(String text, String begin, String end, String body) {
    int b = text.indexOf(begin);
    int e = text.indexOf(end);
    if (b < 0 || e < b) {
      throw new IllegalArgumentException("markers " + begin + " ... " + end + " not found");
    }
    return text.substring(0, b + begin.length()) + "\n" + body + text.substring(e);
  }

  /** What lies between the two markers, without the newline after the first. */
  static String between(String text, String begin, String end) {
    int b = text.indexOf(begin);
    int e = text.indexOf(end);
    if (b < 0 || e < b) {
      throw new IllegalArgumentException("markers " + begin + " ... " + end + " not found");
    }
    return text.substring(b + begin.length() + 1, e);
  }
}
