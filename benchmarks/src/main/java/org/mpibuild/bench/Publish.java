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
 * {@code make bench-publish}: puts the last run's results where the README shows them: the JSON and the
 * chart under docs/, and the tables and the {@code bench:} line, made again from that JSON, between the
 * README's markers. A test checks that the README's figures are exactly those the JSON gives.
 */
final class Publish {
  static final String BEGIN = "<!-- bench:tables:begin -->";
  static final String END = "<!-- bench:tables:end -->";

  private Publish() {}

  public static void main(String[] args) throws Exception {
    Path repo = Path.of(args[0]);
    Path bench = repo.resolve("benchmarks/target/bench");
    Files.copy(bench.resolve("results.json"), repo.resolve("docs/bench-results.json"), StandardCopyOption.REPLACE_EXISTING);
    Files.copy(bench.resolve("time-to-ready.png"), repo.resolve("docs/bench-time-to-ready.png"),
        StandardCopyOption.REPLACE_EXISTING);
    Path readme = repo.resolve("README.md");
    Files.writeString(readme, replaceBetween(Files.readString(readme), BEGIN, END,
        tables(Files.readString(repo.resolve("docs/bench-results.json")))));
    System.out.println("bench-publish: docs/bench-results.json, docs/bench-time-to-ready.png and the README's tables");
  }

  /** The README's tables and line, made from a results.json. */
  static String tables(String resultsJson) throws Exception {
    JsonNode root = new ObjectMapper().readTree(resultsJson);
    List<Integer> ranks = new ArrayList<>();
    List<Map<String, String>> cells = texts(root.get("cells"));
    cells.forEach(c -> {
      int n = Integer.parseInt(c.get("n"));
      if (!ranks.contains(n)) {
        ranks.add(n);
      }
    });
    ranks.sort(null);
    List<Map<String, String>> bcasts = texts(root.get("broadcast"));
    List<Integer> sizes = new ArrayList<>();
    bcasts.forEach(b -> {
      int s = Integer.parseInt(b.get("bytes"));
      if (!sizes.contains(s)) {
        sizes.add(s);
      }
    });
    int bcastReps = (int) bcasts.stream().filter(b -> b.get("n").equals("4") && b.get("bytes").equals(
        Integer.toString(sizes.get(0)))).count();
    Comparison.Mode mode = new Comparison.Mode(root.get("mode").asText(), ranks, root.get("reps").asInt(),
        root.get("program").asText(), sizes, bcastReps);
    int cores = root.get("machine").get("cores").asInt();
    return Comparison.markdown(mode, cells, bcasts, cores) + "\n```\n"
        + Comparison.benchLine(mode, Comparison.lineFigures(mode, cells, bcasts)) + "\n```\n";
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
