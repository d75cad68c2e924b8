package org.mpibuild.internal.protocol;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;

/** Checks a build request on one rank, without communicating. */
final class RequestCheck {
  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  private RequestCheck() {}

  /**
   * Returns what is wrong with the request on a communicator of {@code size} ranks, or null if nothing is.
   * The message names the bad value.
   */
  /** Longest build options accepted: they travel in the binary's metadata, which has a limit of its own. */
  static final int MAX_OPTIONS_CHARS = 1 << 20;

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
    if (options.length() > MAX_OPTIONS_CHARS) {
      return "build options of " + options.length() + " characters exceed the limit of " + MAX_OPTIONS_CHARS
          + " (they travel with the binary): " + quote(options.substring(0, 60)) + "...";
    }
    for (int i = 0; i < options.length(); i++) {
      char c = options.charAt(i);
      if (Character.isISOControl(c) && c != '\t') {
        return "build options " + quote(options) + " contain control character U+"
            + String.format("%04X", (int) c) + " at index " + i;
      }
    }
    return shapeProblem(request.launchShapes(), names);
  }

  /** What is wrong with the launch shapes of a request that creates {@code names} (empty: every kernel). */
  private static String shapeProblem(List<LaunchShape> shapes, List<String> names) {
    if (shapes == null) {
      return "launch shape list is null";
    }
    Set<LaunchShape> seen = new HashSet<>();
    for (LaunchShape s : shapes) {
      if (s == null) {
        return "a launch shape is null";
      }
      String what = "launch shape '" + s + "'";
      if (s.kernel() == null || !IDENTIFIER.matcher(s.kernel()).matches()) {
        return what + ": kernel name " + quote(s.kernel()) + " is not a valid identifier";
      }
      if (!names.isEmpty() && !names.contains(s.kernel())) {
        return what + ": kernel '" + s.kernel() + "' is not among the requested kernels " + names;
      }
      long[] local = s.localSize();
      if (local == null || local.length < 1 || local.length > 3) {
        return what + ": the local size needs 1 to 3 dimensions";
      }
      for (long l : local) {
        if (l < 1) {
          return what + ": local size " + l + " is not positive";
        }
      }
      long[] global = s.globalSize();
      if (global == null || (global.length > 0 && global.length != local.length)) {
        return what + ": the global size needs " + local.length + " dimension" + (local.length == 1 ? "" : "s")
            + ", as the local size has";
      }
      for (int d = 0; d < global.length; d++) {
        if (global[d] < 1 || global[d] % local[d] != 0) {
          return what + ": global size " + global[d] + " is not a positive multiple of local size " + local[d];
        }
      }
      long[] offset = s.globalOffset();
      if (offset == null || (offset.length > 0 && offset.length != local.length)) {
        return what + ": the global offset needs " + local.length + " dimension" + (local.length == 1 ? "" : "s")
            + ", as the local size has";
      }
      for (long o : offset) {
        if (o < 0) {
          return what + ": global offset " + o + " is negative";
        }
      }
      if (!seen.add(s)) {
        return what + " is listed twice";
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
