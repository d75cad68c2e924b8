package org.mpibuild.internal;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import org.mpibuild.KernelSource;

/** Checks a build request on one rank, without communicating. */
final class RequestCheck {
  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  private RequestCheck() {}

  /**
   * Returns what is wrong with the request on a communicator of {@code size} ranks, or null if nothing is.
   * The message names the bad value.
   */
  static String problem(KernelSource request, int root, int size) {
    if (root < 0 || root >= size) {
      return "root " + root + " is out of range for a communicator of " + size + " rank" + (size == 1 ? "" : "s")
          + " (valid: 0.." + (size - 1) + ")";
    }
    if (request == null) {
      return "kernel request is null";
    }
    if (request.source() == null) {
      return "kernel source is null";
    }
    if (request.source().isBlank()) {
      return "kernel source is empty (" + request.source().length() + " blank characters)";
    }
    List<String> names = request.kernelNames();
    if (names == null) {
      return "kernel name list is null";
    }
    Set<String> seen = new HashSet<>();
    for (String name : names) {
      if (name == null || !IDENTIFIER.matcher(name).matches()) {
        return "kernel name " + quote(name) + " is not a valid identifier";
      }
      if (!seen.add(name)) {
        return "kernel name '" + name + "' is listed twice";
      }
    }
    String options = request.options();
    if (options == null) {
      return "build options are null";
    }
    for (int i = 0; i < options.length(); i++) {
      char c = options.charAt(i);
      if (Character.isISOControl(c) && c != '\t') {
        return "build options " + quote(options) + " contain control character U+"
            + String.format("%04X", (int) c) + " at index " + i;
      }
    }
    return null;
  }

  /** What is wrong with a batch of requests, naming the first bad request, or null. */
  static String batchProblem(List<KernelSource> requests, int size) {
    if (requests == null) {
      return "kernel request list is null";
    }
    for (int i = 0; i < requests.size(); i++) {
      String p = problem(requests.get(i), 0, size);
      if (p != null) {
        return "request " + i + " of " + requests.size() + ": " + p;
      }
    }
    return null;
  }

  static String quote(String s) {
    return s == null ? "null" : "'" + s.replace("\n", "\\n").replace("\r", "\\r") + "'";
  }
}
