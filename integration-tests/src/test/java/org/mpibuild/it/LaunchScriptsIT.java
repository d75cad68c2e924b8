package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The launch scripts answer as a command line tool should, without launching anything: every command's
 * {@code --help} prints its usage and exits 0, {@code --version} names the version, and a number of ranks
 * below 1 (or not a number) is refused with exit 2, naming it.
 */
class LaunchScriptsIT {
  static Commands.Run mpiBuild(String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Mpirun.REPO.resolve("bin/mpi-build").toString()));
    cmd.addAll(List.of(args));
    return Commands.run(Mpirun.REPO, Map.of(), 60, cmd);
  }

  @ParameterizedTest
  @ValueSource(strings = {"demo", "run", "classpath", "version", "cache", "precompile", "doctor"})
  void everyCommandPrintsItsHelpAndExitsZero(String command) throws Exception {
    Commands.Run r = mpiBuild(command, "--help");
    assertEquals(0, r.exit(), r.out());
    assertTrue(r.out().toLowerCase(java.util.Locale.ROOT).contains("usage"), command + " --help:\n" + r.out());
    assertTrue(!r.out().contains("verified") && !r.out().contains("/distribution/target/lib/"),
        command + " --help ran the command:\n" + r.out());
  }

  @ParameterizedTest
  @ValueSource(strings = {"0", "-1", "abc", ""})
  void aNumberOfRanksBelowOneIsRefused(String np) throws Exception {
    for (String[] args : List.of(new String[] {"demo", "-np", np}, new String[] {"run", "-np", np, "Main"},
        new String[] {"precompile", "-np", np, "kernels.jsonl"})) {
      Commands.Run r = mpiBuild(args);
      assertEquals(2, r.exit(), String.join(" ", args) + ":\n" + r.out());
      assertTrue(r.out().contains("-np '" + np + "' is not a number of ranks"), r.out());
    }
  }

  @org.junit.jupiter.api.Test
  void versionNamesTheVersionOfTheJars() throws Exception {
    Commands.Run r = mpiBuild("--version");
    assertEquals(0, r.exit(), r.out());
    assertTrue(r.out().matches("mpi-build \\d+\\.\\d+\\.\\d+\\s*"), r.out());
    Commands.Run rank = Commands.run(Mpirun.REPO, Map.of(), 60,
        List.of(Mpirun.REPO.resolve("bin/mpi-build-rank").toString(), "--help"));
    assertEquals(0, rank.exit(), rank.out());
    assertTrue(rank.out().contains("usage: mpirun -np N bin/mpi-build-rank"), rank.out());
  }

  /** Through a symbolic link (a release's bin/ linked into ~/bin, say) the launcher finds its jars. */
  @org.junit.jupiter.api.Test
  void aLinkToTheLauncherFindsItsJars(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    java.nio.file.Path link = dir.resolve("mpi-build");
    java.nio.file.Files.createSymbolicLink(link, Mpirun.REPO.resolve("bin/mpi-build"));
    Commands.Run r = Commands.run(dir, Map.of(), 60, List.of(link.toString(), "--version"));
    assertEquals(0, r.exit(), r.out());
    assertTrue(r.out().matches("mpi-build \\d+\\.\\d+\\.\\d+\\s*"), r.out());
    r = Commands.run(dir, Map.of(), 60, List.of(link.toString(), "classpath"));
    assertEquals(0, r.exit(), r.out());
    assertTrue(r.out().contains(Mpirun.REPO.resolve("distribution/target/lib").toString()), r.out());
  }

  /** A usage error of run exits 2 before any rank starts, naming the problem. */
  @org.junit.jupiter.api.Test
  void runRefusesAUsageErrorBeforeStartingRanks() throws Exception {
    for (List<String> args : List.of(List.of("run", "-np", "2", "-cp"), List.of("run", "-np", "2", "--foo", "Main"),
        List.of("run", "-np", "2"))) {
      Commands.Run r = mpiBuild(args.toArray(String[]::new));
      assertEquals(2, r.exit(), args + ":\n" + r.out());
      assertTrue(r.out().contains("usage: bin/mpi-build run -np N") && !r.out().contains("Exception"), args + ":\n" + r.out());
    }
    Commands.Run r = Commands.run(Mpirun.REPO, Map.of("MPI_BUILD_JAVA_OPTS", "-Dx=\"a"), 60,
        List.of(Mpirun.REPO.resolve("bin/mpi-build").toString(), "run", "-np", "2", "Main"));
    assertEquals(2, r.exit(), r.out());
    assertTrue(r.out().contains("MPI_BUILD_JAVA_OPTS cannot be split into options (unmatched double quote)"), r.out());
  }

  /** MPI_BUILD_JAVA_OPTS is split as a shell splits words: a quoted option with a space stays one option. */
  @org.junit.jupiter.api.Test
  void javaOptionsKeepTheirQuotes() throws Exception {
    Commands.Run r = Commands.run(Mpirun.REPO, Map.of("MPI_BUILD_JAVA_OPTS", "-Dmpibuild.it.a=\"a b\" -Dmpibuild.it.b='c d'"),
        60, List.of(Mpirun.REPO.resolve("bin/mpi-build-rank").toString(), "-XshowSettings:properties", "-version"));
    assertEquals(0, r.exit(), r.out());
    assertTrue(r.out().contains("mpibuild.it.a = a b") && r.out().contains("mpibuild.it.b = c d"), r.out());
  }

  /** Without MPI_BUILD_JAVA_OPTS (the usual case) a rank starts: the script runs under set -u. */
  @org.junit.jupiter.api.Test
  void aRankStartsWithoutJavaOptions() throws Exception {
    Commands.Run r = Commands.run(Mpirun.REPO, Map.of(), 60, List.of("env", "-u", "MPI_BUILD_JAVA_OPTS",
        Mpirun.REPO.resolve("bin/mpi-build-rank").toString(), "-version"));
    assertEquals(0, r.exit(), r.out());
    assertTrue(r.out().contains("version") && !r.out().contains("unbound variable"), r.out());
  }

  /** {@code make help} is the front door: every target of the Makefile, each with one line, none forgotten. */
  @org.junit.jupiter.api.Test
  void makeHelpListsEveryTargetWithALine() throws Exception {
    Commands.Run r = Commands.run(Mpirun.REPO, Map.of(), 60, List.of("make", "--no-print-directory", "help"));
    assertEquals(0, r.exit(), r.out());
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^([a-z][a-z-]*):(?!=)")
        .matcher(java.nio.file.Files.readString(Mpirun.REPO.resolve("Makefile")));
    int targets = 0;
    while (m.find()) {
      targets++;
      assertTrue(r.out().matches("(?s).*\\n  make " + m.group(1) + " +\\S[^\\n]*\\n.*"),
          "make help has no line for " + m.group(1) + ":\n" + r.out());
    }
    assertTrue(targets > 20, targets + " targets found");
  }

  /** Shell scripts live in scripts/, apart from the launchers users run (bin/) and the CI entry point. */
  @org.junit.jupiter.api.Test
  void everyShellScriptLivesInScriptsOrBin() throws Exception {
    Commands.Run files = Commands.run(Mpirun.REPO, Map.of(), 60, List.of("git", "ls-files"));
    assertEquals(0, files.exit(), files.out());
    List<String> astray = new ArrayList<>();
    for (String f : files.out().split("\n")) {
      java.nio.file.Path p = Mpirun.REPO.resolve(f.strip());
      if (f.isBlank() || !java.nio.file.Files.isRegularFile(p) || f.startsWith("scripts/") || f.startsWith("bin/")
          || f.equals(".ci/run")) {
        continue;
      }
      try (java.io.InputStream in = java.nio.file.Files.newInputStream(p)) {
        byte[] head = in.readNBytes(2);
        if (head.length == 2 && head[0] == '#' && head[1] == '!') {
          astray.add(f);
        }
      }
    }
    assertEquals(List.of(), astray, "shell scripts outside scripts/ and bin/");
  }
}
