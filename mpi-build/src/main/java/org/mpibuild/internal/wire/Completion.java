package org.mpibuild.internal.wire;

/** How the binary of a pending envelope comes ({@link Envelope#pending}). */
public interface Completion {
  /**
   * The complete envelope, once the binary being made in the background is made; null, at once, if none is
   * being made, or if it could not be made (after a warning saying why). Waits at most the compile timeout (for a
   * binary made when wanted, until something runs it).
   */
  Envelope awaitMade();

  /**
   * The complete envelope: the one made in the background, else one made now by a compile.
   *
   * @throws IllegalStateException if the binary cannot be made, saying why
   */
  Envelope complete();

  /** Whether the binary is made only when wanted ({@code Compilation.whenWanted}), not under way already. */
  default boolean madeWhenWanted() {
    return false;
  }
}
