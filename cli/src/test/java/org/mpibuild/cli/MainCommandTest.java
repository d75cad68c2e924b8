package org.mpibuild.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code mpi-build} itself (docs/cli.md): help on standard output with exit 0, usage errors on standard
 * error with exit 2, for the top command and every command and sub-command.
 */
class MainCommandTest {
  @ParameterizedTest(name = "mpi-build {0}")
  @ValueSource(strings = {"--help", "-h"})
  void helpListsEveryCommand(String flag) {
    Cli.Run r = Cli.run(flag);
    assertEquals(0, r.exit(), r.all());
    assertTrue(r.out().contains("Usage: mpi-build"), r.all());
    for (String command : new String[] {"cache", "precompile", "doctor"}) {
      assertTrue(r.out().contains(command), command + " listed\n" + r.all());
    }
    assertEquals("", r.err(), "help goes to standard output");
  }

  @Test
  void withoutACommandItPrintsTheUsage() {
    Cli.Run r = Cli.run();
    assertEquals(0, r.exit(), r.all());
    assertTrue(r.out().contains("Usage: mpi-build"), r.all());
  }

  @Test
  void versionNamesTheTool() {
    Cli.Run r = Cli.run("--version");
    assertEquals(0, r.exit(), r.all());
    assertTrue(r.out().startsWith("mpi-build "), r.all());
  }

  /** Every command and sub-command: {@code --help} exits 0 with its own usage. */
  @ParameterizedTest(name = "mpi-build {0} --help")
  @ValueSource(strings = {"cache", "cache stats", "cache ls", "cache verify", "cache gc", "cache clear", "precompile",
      "doctor"})
  void everyCommandHasHelp(String command) {
    String[] words = command.split(" ");
    String[] args = java.util.Arrays.copyOf(words, words.length + 1);
    args[words.length] = "--help";
    Cli.Run r = Cli.run(args);
    assertEquals(0, r.exit(), r.all());
    assertTrue(r.out().contains("Usage: mpi-build " + command), r.all());
    assertTrue(r.out().contains("--help"), r.all());
    assertEquals("", r.err(), "help goes to standard output");
  }

  /**
   * Every command and sub-command: an unknown option exits 2 and names it on standard error (precompile
   * with its required MANIFEST, so that the option is the only fault).
   */
  @ParameterizedTest(name = "mpi-build {0} --no-such-option")
  @ValueSource(strings = {"", "cache", "cache stats", "cache ls", "cache verify", "cache gc", "cache clear",
      "precompile kernels.jsonl", "doctor"})
  void anUnknownOptionIsAUsageError(String command) {
    String[] words = command.isEmpty() ? new String[0] : command.split(" ");
    String[] args = java.util.Arrays.copyOf(words, words.length + 1);
    args[words.length] = "--no-such-option";
    Cli.Run r = Cli.run(args);
    assertEquals(2, r.exit(), r.all());
    assertTrue(r.err().contains("--no-such-option"), r.all());
  }

  @Test
  void precompileWithoutAManifestIsAUsageError() {
    Cli.Run r = Cli.run("precompile");
    assertEquals(2, r.exit(), r.all());
    assertTrue(r.err().contains("MANIFEST"), r.all());
  }

  @Test
  void anUnknownCommandIsAUsageError() {
    Cli.Run r = Cli.run("no-such-command");
    assertEquals(2, r.exit(), r.all());
    assertTrue(r.err().contains("no-such-command"), r.all());
  }

  @Test
  void everyCacheCommandTakesDir() {
    for (String sub : new String[] {"stats", "ls", "verify", "gc", "clear"}) {
      Cli.Run r = Cli.run("cache", sub, "--help");
      assertTrue(r.out().contains("--dir"), sub + "\n" + r.all());
    }
    assertTrue(Cli.run("cache", "stats", "--help").out().contains("--json"));
    assertTrue(Cli.run("cache", "ls", "--help").out().contains("--json"));
    assertTrue(Cli.run("cache", "verify", "--help").out().contains("--remove"));
    Cli.Run gc = Cli.run("cache", "gc", "--help");
    assertTrue(gc.out().contains("--max-size") && gc.out().contains("--max-age"), gc.all());
    Cli.Run precompile = Cli.run("precompile", "--help");
    for (String option : new String[] {"MANIFEST", "--dir", "--backend", "--batch-ranks", "--no-progress"}) {
      assertTrue(precompile.out().contains(option), option + "\n" + precompile.all());
    }
  }
}
