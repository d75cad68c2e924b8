package org.mpibuild;

import java.util.List;
import org.mpibuild.internal.wire.Envelope;

/**
 * A kernel binary with everything needed to check and load it: backend, target, kernel names, build
 * options, build log, length and SHA-256 digest. This is the blob that the root broadcasts.
 *
 * <p>Use it to ship binaries your own way: {@link #toBytes()} on one machine, {@link #fromBytes(byte[])}
 * and {@link MpiBuild#buildKernelFromBinaryData(BinaryData)} on another. The bytes are checked when they
 * are read; corrupt or truncated data is refused and never loaded.
 */
public final class BinaryData {
  private final Envelope envelope;

  BinaryData(Envelope envelope) {
    this.envelope = envelope;
  }

  /**
   * Parses and checks serialized binary data.
   *
   * @param bytes what {@link #toBytes()} returned
   * @return the binary data
   * @throws CorruptBinaryException if the magic, version, checksums, length or digest are wrong
   */
  public static BinaryData fromBytes(byte[] bytes) {
    if (bytes == null) {
      throw new NullPointerException("bytes is null");
    }
    return new BinaryData(Envelope.fromBytes(bytes, Long.MAX_VALUE));
  }

  /**
   * Serializes the binary with its header and metadata.
   *
   * @return the bytes, in the documented envelope format
   */
  public byte[] toBytes() {
    return envelope.toBytes();
  }

  /** @return the id of the backend that built the binary */
  public String backend() {
    return envelope.metadata().backend();
  }

  /** @return the identity of the device the binary was built for */
  public String target() {
    return envelope.metadata().target();
  }

  /** @return the kernel names the binary provides */
  public List<String> kernelNames() {
    return envelope.metadata().kernelNames();
  }

  /** @return the compiler that built the binary: path or library, version and flags */
  public String compiler() {
    return envelope.metadata().compiler();
  }

  /** @return the build options the binary was compiled with */
  public String options() {
    return envelope.metadata().options();
  }

  /** @return what the compiler printed */
  public String buildLog() {
    return envelope.metadata().buildLog();
  }

  /**
   * Returns the binary itself, without header and metadata: what the backend's loader takes (for CUDA a cubin,
   * fatbin or PTX image, for {@code cuModuleLoadData} or {@code cuModuleLoadDataJIT}, with a NUL byte appended
   * if it is PTX text; for OpenCL a program binary for {@code clCreateProgramWithBinary}). For a program that
   * loads it with the driver itself, for example into a context of its own. Its digest is {@link #sha256()}.
   *
   * @return a copy of the binary, {@link #binaryLength()} bytes
   * @throws IllegalStateException if the binary is too large for one Java array (about 2 GiB)
   */
  public byte[] binary() {
    return envelope.payload().toByteArray();
  }

  /** @return the length of the binary itself, without header and metadata */
  public long binaryLength() {
    return envelope.payload().length();
  }

  /** @return the SHA-256 of the binary, as lowercase hex */
  public String sha256() {
    return envelope.payloadSha256Hex();
  }

  Envelope envelope() {
    return envelope;
  }

  @Override
  public String toString() {
    return "BinaryData[" + backend() + ", " + kernelNames() + ", " + binaryLength() + " bytes, sha256 "
        + sha256().substring(0, 12) + "]";
  }
}
