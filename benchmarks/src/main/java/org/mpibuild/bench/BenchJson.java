package org.mpibuild.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The benchmarks' JSON, through Jackson: JSON Lines from the jobs, reports for people and tools. */
final class BenchJson {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private BenchJson() {}

  /** One object on one line, with a newline: fields given as key, value, key, value, ... in that order. */
  static String line(Object... keysAndValues) {
    return write(object(keysAndValues)) + "\n";
  }

  /** An object with its fields in the given order. */
  static Map<String, Object> object(Object... keysAndValues) {
    Map<String, Object> o = new LinkedHashMap<>();
    for (int i = 0; i < keysAndValues.length; i += 2) {
      o.put((String) keysAndValues[i], keysAndValues[i + 1]);
    }
    return o;
  }

  /** A report, indented for people. */
  static String pretty(Object value) {
    try {
      return MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(value) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  static String write(Object value) {
    try {
      return MAPPER.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Reads JSON Lines: one map per object, every value as its text. */
  /** The complete lines of a job that died: a last line without its newline was cut off mid-write. */
  static List<Map<String, String>> readCompleteLines(String jsonl) {
    int end = jsonl.lastIndexOf('\n');
    return readLines(end < 0 ? "" : jsonl.substring(0, end + 1));
  }

  static List<Map<String, String>> readLines(String jsonl) {
    List<Map<String, String>> out = new ArrayList<>();
    for (String line : jsonl.split("\n")) {
      if (line.isBlank()) {
        continue;
      }
      try {
        JsonNode o = MAPPER.readTree(line);
        Map<String, String> m = new LinkedHashMap<>();
        o.fields().forEachRemaining(f -> m.put(f.getKey(), f.getValue().asText()));
        out.add(m);
      } catch (JsonProcessingException e) {
        throw new IllegalArgumentException("not a JSON line: " + line, e);
      }
    }
    return out;
  }

  /** JSON Lines with every line whose strategy is {@code from} given strategy {@code to}; the others as they were. */
  static String withStrategy(String jsonl, String from, String to) {
    StringBuilder out = new StringBuilder();
    for (Map<String, String> cell : readLines(jsonl)) {
      if (from.equals(cell.get("strategy"))) {
        cell.put("strategy", to);
      }
      out.append(write(typed(cell))).append('\n');
    }
    return out.toString();
  }

  /** A map of texts as JSON values: numbers where the text is one, strings otherwise. */
  static Map<String, Object> typed(Map<String, String> texts) {
    Map<String, Object> o = new LinkedHashMap<>();
    texts.forEach((k, v) -> {
      Object value = v;
      try {
        value = new BigDecimal(v);
      } catch (NumberFormatException e) {
        // a word, kept as a string
      }
      o.put(k, value);
    });
    return o;
  }

  /** {@code v} rounded to {@code decimals} places, for reports that a person reads. */
  static double round(double v, int decimals) {
    double scale = Math.pow(10, decimals);
    return Math.round(v * scale) / scale;
  }
}
