package org.mpibuild.cuda;

/** A CUDA binary (fatbin or cubin) that cannot be read: the message names the offset and what is wrong. */
final class CudaBinaryFormatException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  private final long offset;

  CudaBinaryFormatException(long offset, String problem) {
    super(problem + " at offset " + offset + " (0x" + Long.toHexString(offset) + ")");
    this.offset = offset;
  }

  /** Where in the binary the problem was found, in bytes from its start. */
  long offset() {
    return offset;
  }
}
