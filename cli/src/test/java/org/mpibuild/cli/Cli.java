package org.mpibuild.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import com.fasterxml.jackson.databind.JsonNode;

/** Runs {@code mpi-build ARGS} in this JVM, as {@code bin/mpi-build} does, with its output captured. */
final class Cli {
  /** A finished command: its exit code, standard output and standard error. */
  record Run(int exit, String out, String err) {
    /** Everything it printed, for assertion messages. */
    String all() {
      return "exit " + exit + "\n--- stdout\n" + out + "--- stderr\n" + err;
    }

    /** Standard output as JSON objects, one a line. */
    List<JsonNode> json() {
      List<JsonNode> nodes = new ArrayList<>();
      for (String line : out.lines().filter(l -> !l.isBlank()).toList()) {
        try {
          nodes.add(Json.MAPPER.readTree(line));
        } catch (Exception e) {
          throw new AssertionError("not a JSON object: " + line + "\n" + all(), e);
        }
      }
      return nodes;
    }
  }

  private Cli() {}

  /** Runs the command line with System.out and System.err captured (one command at a time). */
  static synchronized Run run(String... args) {
    PrintStream out = System.out;
    PrintStream err = System.err;
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    ByteArrayOutputStream e = new ByteArrayOutputStream();
    try {
      System.setOut(new PrintStream(o, true, StandardCharsets.UTF_8));
      System.setErr(new PrintStream(e, true, StandardCharsets.UTF_8));
      int exit = Main.run(args);
      System.out.flush();
      System.err.flush();
      return new Run(exit, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
    } finally {
      System.setOut(out);
      System.setErr(err);
    }
  }
}
