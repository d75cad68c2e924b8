package org.mpibuild.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.mpibuild.KernelSource;

/**
 * A manifest that {@code MPI_BUILD_RECORD} wrote: one JSON object per line,
 * {@code {"backend":..., "targets":[...], "kernels":[...], "options":..., "source":...}}.
 */
final class Manifest {
  /** One recorded request, with its line number. */
  record Entry(int line, String backend, List<String> targets, KernelSource request) {}

  private Manifest() {}

  /**
   * Reads a manifest; blank lines and lines starting with {@code #} are skipped.
   *
   * @throws IllegalArgumentException naming the file and line of the first bad entry
   * @throws UncheckedIOException if the file cannot be read
   */
  static List<Entry> read(Path file) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the manifest " + file + ": " + e, e);
    }
    List<Entry> out = new ArrayList<>();
    for (int n = 0; n < lines.size(); n++) {
      String line = lines.get(n).trim();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      try {
        JsonNode o = Json.MAPPER.readTree(line);
        if (o == null || !o.isObject()) {
          throw new IllegalArgumentException("not a JSON object");
        }
        String source = text(o, "source", null);
        if (source == null) {
          throw new IllegalArgumentException("no \"source\"");
        }
        KernelSource request = KernelSource.of(source).withKernels(strings(o, "kernels"))
            .withOptions(text(o, "options", ""));
        out.add(new Entry(n + 1, text(o, "backend", ""), strings(o, "targets"), request));
      } catch (JsonProcessingException e) {
        throw new IllegalArgumentException(file + ":" + (n + 1) + ": not a manifest entry: "
            + e.getOriginalMessage(), e);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(file + ":" + (n + 1) + ": not a manifest entry: " + e.getMessage(), e);
      }
    }
    return out;
  }

  private static String text(JsonNode o, String key, String dflt) {
    JsonNode v = o.get(key);
    if (v == null || v.isNull()) {
      return dflt;
    }
    if (!v.isTextual()) {
      throw new IllegalArgumentException("\"" + key + "\" is not a string");
    }
    return v.textValue();
  }

  private static List<String> strings(JsonNode o, String key) {
    JsonNode v = o.get(key);
    List<String> out = new ArrayList<>();
    if (v == null || v.isNull()) {
      return out;
    }
    if (!v.isArray()) {
      throw new IllegalArgumentException("\"" + key + "\" is not a list of strings");
    }
    for (JsonNode x : v) {
      if (!x.isTextual()) {
        throw new IllegalArgumentException("\"" + key + "\" is not a list of strings");
      }
      out.add(x.textValue());
    }
    return out;
  }
}
