package org.mpibuild.cli;

import java.nio.file.FileSystemException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code mpi-build}: the Java side of {@code bin/mpi-build}. Exit codes: 0 ok, 1 failure, 2 usage.
 * Help goes to standard output, errors to standard error.
 */
@Command(name = "mpi-build", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
    description = "Collective run-time kernel builds for MPI Java programs.",
    subcommands = {CacheCommand.class, PrecompileCommand.class, DoctorCommand.class})
public final class Main implements Runnable {
  /** The version the build wrote into this jar's manifest (from the root pom's {@code revision}). */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = Main.class.getPackage().getImplementationVersion();
      return new String[] {"mpi-build " + (v == null ? "(unknown: not run from a built jar)" : v)};
    }
  }

  @Override
  public void run() {
    CommandLine.usage(this, System.out);
  }

  public static void main(String[] args) {
    System.exit(run(args));
  }

  /** Runs the command line and returns its exit code. */
  public static int run(String... args) {
    CommandLine cl = new CommandLine(new Main());
    cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
      // A file system exception's message is often a bare path: its kind says what happened to it.
      cmd.getErr().println("mpi-build: " + (e.getMessage() == null || e instanceof FileSystemException
          ? e.toString() : e.getMessage()));
      return 1;
    });
    return cl.execute(args);
  }
}
