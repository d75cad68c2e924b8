package org.mpibuild.spi;

import java.util.Objects;
import java.util.concurrent.Future;
import java.util.concurrent.RunnableFuture;

/**
 * The result of a successful compile on the root.
 *
 * @param program the program, loaded on the root's device; null for a backend that compiles for targets
 *     it cannot load here (for example CUDA architectures named explicitly on a node without a GPU)
 * @param binary the binary to send to the other ranks; null when it comes later ({@code binaryLater}) or
 *     was not asked for ({@link Backend#compileAlone})
 * @param buildLog what the compiler printed (warnings), possibly empty
 * @param binaryLater the binary still being made, or to be made when first wanted, for a program already ready
 *     here ({@link Backend#compileAlone}); null otherwise. Cancelling it with interruption stops whatever makes it.
 * @param binaryWhenWanted whether {@code binaryLater} is a task that nothing runs until the binary is wanted
 *     ({@link #whenWanted})
 */
public record Compilation(LoadedProgram program, byte[] binary, String buildLog, Future<byte[]> binaryLater,
    boolean binaryWhenWanted) {
  /**
   * A compilation whose binary is complete.
   *
   * @param program the program loaded here, or null (see the record's description)
   * @param binary the binary
   * @param buildLog what the compiler printed, possibly empty
   */
  public Compilation(LoadedProgram program, byte[] binary, String buildLog) {
    this(program, binary, buildLog, null, false);
  }

  /**
   * A compilation whose binary, if not complete, is being made already (the form before {@link #whenWanted}).
   *
   * @param program the program loaded here, or null
   * @param binary the binary, or null
   * @param buildLog what the compiler printed, possibly empty
   * @param binaryLater the binary still being made, or null
   */
  public Compilation(LoadedProgram program, byte[] binary, String buildLog, Future<byte[]> binaryLater) {
    this(program, binary, buildLog, binaryLater, false);
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
        Objects.requireNonNull(binary, "binary"), false);
  }

  /**
   * A program ready here whose binary is made when first wanted, from what the program has become (on PoCL,
   * the code its launches generated): {@code Kernel.binaryData()} runs {@code binary}, and so must the program's
   * {@link LoadedProgram#close} before it releases what the binary is made from ({@code MpiBuild.close()} closes
   * its kernels first). It should only read what the program holds (it runs in a close); where it fails, a full
   * {@link Backend#compile(org.mpibuild.KernelSource, String)} makes the binary, within the compile timeout, off the
   * closing thread. Nothing waits for it holding the shared cache's lock, and no compile timeout runs while nobody
   * has started it; a program that the JVM's exit ends unclosed leaves no cache entry.
   *
   * @param program the program, loaded here
   * @param buildLog what the compiler printed, possibly empty
   * @param binary the binary, made when run
   * @return the compilation
   */
  public static Compilation whenWanted(LoadedProgram program, String buildLog, RunnableFuture<byte[]> binary) {
    return new Compilation(Objects.requireNonNull(program, "program"), null, buildLog,
        Objects.requireNonNull(binary, "binary"), true);
  }

  /**
   * A program ready here, without a binary: none was asked for.
   *
   * @param program the program, loaded here
   * @param buildLog what the compiler printed, possibly empty
   * @return the compilation
   */
  public static Compilation withoutBinary(LoadedProgram program, String buildLog) {
    return new Compilation(Objects.requireNonNull(program, "program"), null, buildLog, null, false);
  }
}
