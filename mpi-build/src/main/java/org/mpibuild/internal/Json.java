package org.mpibuild.internal;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The little JSON the library writes and reads itself (manifests): objects, arrays, strings, numbers,
 * booleans and null, on one line. Not a general-purpose parser; the library has no JSON dependency.
 */
final class Json {
  private Json() {}

  static String write(Object value) {
    StringBuilder sb = new StringBuilder();
    write(sb, value);
    return sb.toString();
  }

  private static void write(StringBuilder sb, Object v) {
    if (v == null) {
      sb.append("null");
    } else if (v instanceof String s) {
      quote(sb, s);
    } else if (v instanceof Number || v instanceof Boolean) {
      sb.append(v);
    } else if (v instanceof List<?> l) {
      sb.append('[');
      for (int i = 0; i < l.size(); i++) {
        sb.append(i == 0 ? "" : ",");
        write(sb, l.get(i));
      }
      sb.append(']');
    } else if (v instanceof Map<?, ?> m) {
      sb.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : m.entrySet()) {
        sb.append(first ? "" : ",");
        first = false;
        quote(sb, String.valueOf(e.getKey()));
        sb.append(':');
        write(sb, e.getValue());
      }
      sb.append('}');
    } else {
      throw new IllegalArgumentException("cannot write " + v.getClass().getName() + " as JSON");
    }
  }

  private static void quote(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    sb.append('"');
  }

  /** Reads one JSON object. Throws IllegalArgumentException naming the position of the first error. */
  @SuppressWarnings("unchecked")
  static Map<String, Object> readObject(String text) {
    Reader r = new Reader(text);
    r.space();
    if (r.peek() != '{') {
      throw r.error("expected an object");
    }
    Object o = r.value();
    r.space();
    if (r.pos != text.length()) {
      throw r.error("unexpected text after the object");
    }
    return (Map<String, Object>) o;
  }

  private static final class Reader {
    private final String s;
    private int pos;

    Reader(String s) {
      this.s = s;
    }

    char peek() {
      return pos < s.length() ? s.charAt(pos) : '\0';
    }

    void space() {
      while (pos < s.length() && Character.isWhitespace(s.charAt(pos))) {
        pos++;
      }
    }

    IllegalArgumentException error(String what) {
      return new IllegalArgumentException(what + " at column " + (pos + 1));
    }

    void expect(char c) {
      space();
      if (peek() != c) {
        throw error("expected '" + c + "'");
      }
      pos++;
    }

    Object value() {
      space();
      char c = peek();
      if (c == '{') {
        pos++;
        Map<String, Object> m = new LinkedHashMap<>();
        space();
        if (peek() == '}') {
          pos++;
          return m;
        }
        do {
          space();
          String key = string();
          expect(':');
          m.put(key, value());
          space();
        } while (peek() == ',' && pos++ >= 0);
        expect('}');
        return m;
      }
      if (c == '[') {
        pos++;
        List<Object> l = new ArrayList<>();
        space();
        if (peek() == ']') {
          pos++;
          return l;
        }
        do {
          l.add(value());
          space();
        } while (peek() == ',' && pos++ >= 0);
        expect(']');
        return l;
      }
      if (c == '"') {
        return string();
      }
      for (String word : new String[] {"true", "false", "null"}) {
        if (s.startsWith(word, pos)) {
          pos += word.length();
          return word.equals("null") ? null : Boolean.valueOf(word);
        }
      }
      int start = pos;
      while (pos < s.length() && "+-0123456789.eE".indexOf(s.charAt(pos)) >= 0) {
        pos++;
      }
      if (start == pos) {
        throw error("unexpected character '" + c + "'");
      }
      try {
        return Double.valueOf(s.substring(start, pos));
      } catch (NumberFormatException e) {
        throw error("bad number");
      }
    }

    String string() {
      if (peek() != '"') {
        throw error("expected a string");
      }
      pos++;
      StringBuilder sb = new StringBuilder();
      while (true) {
        if (pos >= s.length()) {
          throw error("unterminated string");
        }
        char c = s.charAt(pos++);
        if (c == '"') {
          return sb.toString();
        }
        if (c != '\\') {
          sb.append(c);
          continue;
        }
        char e = pos < s.length() ? s.charAt(pos++) : '\0';
        switch (e) {
          case '"', '\\', '/' -> sb.append(e);
          case 'n' -> sb.append('\n');
          case 'r' -> sb.append('\r');
          case 't' -> sb.append('\t');
          case 'b' -> sb.append('\b');
          case 'f' -> sb.append('\f');
          case 'u' -> {
            if (pos + 4 > s.length()) {
              throw error("bad \\u escape");
            }
            try {
              sb.append((char) Integer.parseInt(s.substring(pos, pos + 4), 16));
            } catch (NumberFormatException x) {
              throw error("bad \\u escape");
            }
            pos += 4;
          }
          default -> throw error("bad escape '\\" + e + "'");
        }
      }
    }
  }
}
