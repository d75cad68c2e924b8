package org.mpibuild.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;

/**
 * A manifest that {@code MPI_BUILD_RECORD} wrote: one JSON object per line,
 * {@code {"backend":..., "targets":[...], "kernels":[...], "options":..., "source":..., "launch":[...]}}, where
 * each launch shape is {@code {"kernel":..., "local":[...], "global":[...], "offset":[...]}} (global and
 * offset optional).
 */
final class ManifestReader {
  /** One recorded request, with its line number. */
  record Entry(int line, String backend, List<String> targets, KernelSource request) {}

  private ManifestReader() {}

  /**
   * Reads a manifest; blank lines and lines starting with {@code #} are skipped.
   *
   * @throws IllegalArgumentException naming the file and line of the first bad entry
   * @throws UncheckedIOException if the file cannot be read
   */
  static List<Entry> read(Path file) {
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the manifest " + file + ": " + e, e);
    }
    List<String> lines = lines(file, bytes);
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
            .withOptions(text(o, "options", "")).withLaunchShapes(shapes(o));
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

  /** The file's lines, each decoded strictly as UTF-8, so that a bad byte is reported with its line. */
  private static List<String> lines(Path file, byte[] bytes) {
    List<String> lines = new ArrayList<>();
    CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
    int start = 0;
    while (start < bytes.length) {
      int end = start;
      while (end < bytes.length && bytes[end] != '\n') {
        end++;
      }
      ByteBuffer in = ByteBuffer.wrap(bytes, start, end - start);
      CharBuffer line = CharBuffer.allocate(end - start); // UTF-8 never has more characters than bytes
      CoderResult result = utf8.reset().decode(in, line, true);
      if (result.isError()) {
        throw new IllegalArgumentException(file + ":" + (lines.size() + 1) + ": not UTF-8: byte 0x"
            + String.format("%02X", bytes[in.position()] & 0xFF) + " at column " + (in.position() - start + 1));
      }
      utf8.flush(line);
      lines.add(line.flip().toString());
      start = end + 1;
    }
    return lines;
  }

  private static List<LaunchShape> shapes(JsonNode o) {
    JsonNode v = o.get("launch");
    List<LaunchShape> out = new ArrayList<>();
    if (v == null || v.isNull()) {
      return out;
    }
    if (!v.isArray()) {
      throw new IllegalArgumentException("\"launch\" is not a list of launch shapes");
    }
    for (JsonNode s : v) {
      if (!s.isObject()) {
        throw new IllegalArgumentException("\"launch\" holds " + s + ", not a launch shape object");
      }
      LaunchShape shape = LaunchShape.of(text(s, "kernel", null), longs(s, "local"));
      if (s.has("global")) {
        shape = shape.withGlobalSize(longs(s, "global"));
      }
      if (s.has("offset")) {
        shape = shape.withGlobalOffset(longs(s, "offset"));
      }
      out.add(shape);
    }
    return out;
  }

  private static long[] longs(JsonNode o, String key) {
    JsonNode v = o.get(key);
    if (v == null || !v.isArray()) {
      throw new IllegalArgumentException("launch shape " + o + ": \"" + key + "\" is not a list of integers");
    }
    long[] out = new long[v.size()];
    for (int i = 0; i < out.length; i++) {
      if (!v.get(i).canConvertToLong() || !v.get(i).isIntegralNumber()) {
        throw new IllegalArgumentException("launch shape " + o + ": \"" + key + "\" holds " + v.get(i)
            + ", not an integer");
      }
      out[i] = v.get(i).longValue();
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
