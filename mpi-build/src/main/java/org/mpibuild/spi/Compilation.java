package org.mpibuild.spi;

import java.util.Objects;
import java.util.concurrent.Future;

/**
 * The result of a successful compile on the root.
 *
 * @param program the program, loaded on the root's device; null for a backend that compiles for targets
 *     it cannot load here (for example CUDA architectures named explicitly on a node without a GPU)
 * @param binary the binary to send to the other ranks; null when it comes later ({@code binaryLater}) or
 *     was not asked for ({@link Backend#compileAlone})
 * @param buildLog what the compiler printed (warnings), possibly empty
 * @param binaryLater the binary still being made, for a program already ready here
 *     ({@link Backend#compileAlone}); null otherwise. Cancelling it with interruption stops whatever makes it.
 */
public record Compilation(LoadedProgram program, byte[] binary, String buildLog, Future<byte[]> binaryLater) {
  /**
   * A compilation whose binary is complete.
   *
   * @param program the program loaded here, or null (see the record's description)
   * @param binary the binary
   * @param buildLog what the compiler printed, possibly empty
   */
  public Compilation(LoadedProgram program, byte[] binary, String buildLog) {
    this(program, binary, buildLog, null);
  }

  /**
   * A program ready here whose binary is still being made.
   *
   * @param program the program, loaded here
   * @param buildLog what the compiler printed, possibly empty
   * @param binary the binary being made; cancelling it with interruption stops its making
   * @return the compilation
   */
  public static Compilation later(LoadedProgram program, String buildLog, Future<byte[]> binary) {
    return new Compilation(Objects.requireNonNull(program, "program"), null, buildLog,
        Objects.requireNonNull(binary, "binary"));
  }

  /**
   * A program ready here, without a binary: none was asked for.
   *
   * @param program the program, loaded here
   * @param buildLog what the compiler printed, possibly empty
   * @return the compilation
   */
  public static Compilation withoutBinary(LoadedProgram program, String buildLog) {
    return new Compilation(Objects.requireNonNull(program, "program"), null, buildLog, null);
  }
}
