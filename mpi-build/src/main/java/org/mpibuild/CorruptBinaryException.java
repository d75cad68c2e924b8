package org.mpibuild;

/**
 * A binary failed its integrity checks (magic, format version, length or SHA-256 digest) and was not
 * loaded.
 */
public class CorruptBinaryException extends KernelBuildException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates an integrity failure.
   *
   * @param message which check failed, with the expected and actual values
   */
  public CorruptBinaryException(String message) {
    super(message);
  }
}
