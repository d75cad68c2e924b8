package org.mpibuild.it;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs a command line to completion, with a deadline, for the tests of the command-line tools. */
final class Commands {
  /** A finished command: its exit status and its output, standard error included. */
  record Run(int exit, String out) {}

  private Commands() {}

  static Run run(Path dir, Map<String, String> env, long seconds, List<String> cmd)
      throws IOException, InterruptedException {
    Path out = Files.createTempFile("command", ".out");
    try {
      ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
          .redirectOutput(out.toFile());
      pb.environment().putAll(env);
      Process p = pb.start();
      if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
        throw new AssertionError(String.join(" ", cmd) + " did not finish in " + seconds + " s");
      }
      return new Run(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(out);
    }
  }
}
