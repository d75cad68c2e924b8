package org.mpibuild.cli;

import java.util.List;
import java.util.stream.Collectors;

/** The little JSON the CLI writes. */
final class Json {
  private Json() {}

  static String str(Object o) {
    if (o == null) {
      return "null";
    }
    StringBuilder sb = new StringBuilder("\"");
    for (char c : o.toString().toCharArray()) {
      switch (c) {
        case '"': sb.append("\\\""); break;
        case '\\': sb.append("\\\\"); break;
        case '\n': sb.append("\\n"); break;
        case '\r': sb.append("\\r"); break;
        case '\t': sb.append("\\t"); break;
        default:
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
      }
    }
    return sb.append('"').toString();
  }

  static String strings(List<String> items) {
    return items.stream().map(Json::str).collect(Collectors.joining(", ", "[", "]"));
  }
}
