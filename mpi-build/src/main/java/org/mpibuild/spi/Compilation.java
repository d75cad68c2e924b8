package org.mpibuild.spi;

/**
 * The result of a successful compile on the root.
 *
 * @param program the program, loaded on the root's device
 * @param binary the binary to send to the other ranks
 * @param buildLog what the compiler printed (warnings), possibly empty
 */
public record Compilation(LoadedProgram program, byte[] binary, String buildLog) {}
