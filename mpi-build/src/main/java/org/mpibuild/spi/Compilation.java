package org.mpibuild.spi;

/**
 * The result of a successful compile on the root.
 *
 * @param program the program, loaded on the root's device; null for a backend that compiles for targets
 *     it cannot load here (for example CUDA architectures named explicitly on a node without a GPU)
 * @param binary the binary to send to the other ranks
 * @param buildLog what the compiler printed (warnings), possibly empty
 */
public record Compilation(LoadedProgram program, byte[] binary, String buildLog) {}
