package org.mpibuild.internal.wire;

import static org.mpibuild.internal.wire.WireFields.crc;
import static org.mpibuild.internal.wire.WireFields.cut;
import static org.mpibuild.internal.wire.WireFields.hex;
import static org.mpibuild.internal.wire.WireFields.nonNull;
import static org.mpibuild.internal.wire.WireFields.readUtf8;
import static org.mpibuild.internal.wire.WireFields.utf8;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32C;
import org.mpibuild.CorruptBinaryException;

/**
 * The self-describing unit that the root broadcasts, that {@link org.mpibuild.BinaryData} wraps and that
 * a cache stores: a fixed header, metadata, then the payload (the binary).
 *
 * <pre>
 * header, 64 bytes, big-endian:
 *   0  8  magic "MPIBUILD"
 *   8  2  format version (1)
 *  10  1  status: 0 ok, 1 compile failed, 2 invalid request, 3 internal error, 4 compile timed out
 *  11  1  reserved, 0
 *  12  4  metadata length in bytes
 *  16  8  payload length in bytes
 *  24 32  SHA-256 of the payload
 *  56  4  CRC32C of the metadata
 *  60  4  CRC32C of header bytes 0..59
 * metadata: backend id, target identity, kernel count and names, build options, build log, error message,
 *   cache key (empty when not cached), compiler identity (path, version, flags); each string as a 4-byte
 *   length and UTF-8 bytes
 * payload: the binary
 * </pre>
 *
 * <p>The layout, its checks and the encoders and decoders of its header and metadata are here, read together;
 * the encodings of single fields (checksums, length-prefixed strings, texts cut to a limit) are in
 * {@link WireFields}.
 */
public final class Envelope {
  static final byte[] MAGIC = "MPIBUILD".getBytes(StandardCharsets.US_ASCII);
  /** Version of the layout above. */
  public static final int FORMAT_VERSION = 1;
  /** Size of the fixed header. */
  public static final int HEADER_BYTES = 64;
  /** Largest metadata accepted, on both sides of the wire: the fields below are cut to fit well within it. */
  public static final int MAX_METADATA_BYTES = 64 << 20;
  /**
   * Largest build log carried, in UTF-8 bytes. A longer log keeps its head and its tail, with a line in
   * between that says how much was cut ({@link #cut}): the first errors and the summary stay readable.
   */
  public static final int MAX_BUILD_LOG_BYTES = 8 << 20;
  /** Largest error message carried, in UTF-8 bytes, cut the same way. */
  public static final int MAX_ERROR_BYTES = 1 << 20;

  /** Outcome carried by an envelope; {@code SHARE} is none, but a root's plan to share its compile ({@link #share}). */
  public enum Status {
    OK(0), COMPILE_FAILED(1), INVALID_REQUEST(2), INTERNAL_ERROR(3), COMPILE_TIMED_OUT(4), SHARE(5);

    private final int code;

    Status(int code) {
      this.code = code;
    }

    /** The status's code in the header: part of the format, never to be renumbered. */
    public int code() {
      return code;
    }

    public static Status of(int code) {
      for (Status s : values()) {
        if (s.code == code) {
          return s;
        }
      }
      throw new CorruptBinaryException("unknown status code " + code + " in binary header");
    }
  }

  /**
   * What the envelope says about its payload. Strings are never null. Made by the named factories below
   * ({@link #built}, {@link #failed}, {@link #failedFor}, {@link #errorOnly}); the canonical constructor is
   * for decoding.
   */
  public record Metadata(String backend, String target, List<String> kernelNames, String options, String buildLog,
      String error, String cacheKey, String compiler) {
    public Metadata {
      backend = nonNull(backend);
      target = nonNull(target);
      kernelNames = List.copyOf(kernelNames);
      options = nonNull(options);
      buildLog = cut(nonNull(buildLog), MAX_BUILD_LOG_BYTES, "build log");
      error = cut(nonNull(error), MAX_ERROR_BYTES, "error message");
      cacheKey = nonNull(cacheKey);
      compiler = nonNull(compiler);
    }

    /**
     * The metadata of a binary that was built: no error.
     *
     * @param cacheKey the key of its cache entry, empty when not cached
     * @param compiler the compiler's identity (path, version, flags)
     */
    public static Metadata built(String backend, String target, List<String> kernelNames, String options,
        String buildLog, String cacheKey, String compiler) {
      return new Metadata(backend, target, kernelNames, options, buildLog, "", cacheKey, compiler);
    }

    /**
     * The metadata of a request whose build failed: its error message, no compiler identity.
     *
     * @param cacheKey the key of its (negative) cache entry, empty when not cached
     */
    public static Metadata failed(String backend, String target, List<String> kernelNames, String options,
        String buildLog, String error, String cacheKey) {
      return new Metadata(backend, target, kernelNames, options, buildLog, error, cacheKey, "");
    }

    /**
     * The metadata of a build failure as another rank reported it: the target it was for, its build log and
     * error message; no backend, kernel names, options, cache key or compiler.
     */
    public static Metadata failedFor(String target, String buildLog, String error) {
      return new Metadata("", target, List.of(), "", buildLog, error, "", "");
    }

    /** The metadata of an error about no request in particular: the backend and the error message alone. */
    public static Metadata errorOnly(String backend, String error) {
      return new Metadata(backend, "", List.of(), "", "", error, "", "");
    }

    byte[] encode() {
      List<byte[]> parts = new ArrayList<>();
      parts.add(utf8(backend));
      parts.add(utf8(target));
      parts.add(ByteBuffer.allocate(4).putInt(kernelNames.size()).array());
      for (String k : kernelNames) {
        parts.add(utf8(k));
      }
      parts.add(utf8(options));
      parts.add(utf8(buildLog));
      parts.add(utf8(error));
      parts.add(utf8(cacheKey));
      parts.add(utf8(compiler));
      int size = 0;
      for (byte[] p : parts) {
        size += p.length;
      }
      if (size > MAX_METADATA_BYTES) {
        // The receivers refuse such metadata as corrupt, so the root refuses to send it. Only the options,
        // the kernel names, the target or the compiler's identity can be this long: the log is cut.
        throw new IllegalArgumentException("binary metadata of " + size + " bytes exceeds the limit of "
            + MAX_METADATA_BYTES + " (options " + options.length() + " characters, " + kernelNames.size()
            + " kernel names, target " + target.length() + ", compiler " + compiler.length() + ")");
      }
      ByteBuffer out = ByteBuffer.allocate(size);
      parts.forEach(out::put);
      return out.array();
    }

    static Metadata decode(byte[] bytes) {
      ByteBuffer in = ByteBuffer.wrap(bytes);
      try {
        String backend = readUtf8(in);
        String target = readUtf8(in);
        int count = in.getInt();
        if (count < 0 || count > bytes.length) {
          throw new CorruptBinaryException("kernel count " + count + " in binary metadata is impossible");
        }
        List<String> names = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
          names.add(readUtf8(in));
        }
        Metadata m = new Metadata(backend, target, names, readUtf8(in), readUtf8(in), readUtf8(in), readUtf8(in),
            readUtf8(in));
        if (in.hasRemaining()) {
          throw new CorruptBinaryException(in.remaining() + " unexpected bytes after the binary metadata");
        }
        return m;
      } catch (BufferUnderflowException e) {
        throw new CorruptBinaryException("binary metadata is truncated (" + bytes.length + " bytes)");
      }
    }
  }

  /** The fixed header, as decoded and checked. */
  public record Header(Status status, int metadataLength, long payloadLength, byte[] payloadSha256, int metadataCrc) {}

  private final Status status;
  private final Metadata metadata;
  private final Payload payload;
  private final byte[] payloadSha256;
  /** For a pending envelope, how its binary comes; null for a complete envelope. */
  private final Completion completion;

  private Envelope(Status status, Metadata metadata, Payload payload, byte[] payloadSha256) {
    this(status, metadata, payload, payloadSha256, null);
  }

  private Envelope(Status status, Metadata metadata, Payload payload, byte[] payloadSha256, Completion completion) {
    this.status = status;
    this.metadata = metadata;
    this.payload = payload;
    this.payloadSha256 = payloadSha256;
    this.completion = completion;
  }

  /**
   * The envelope of a binary still being made, or made only if asked for, on the one rank that runs its program
   * ({@code Backend.compileAlone}): status OK, no payload, never sent nor stored; {@link #complete} and
   * {@link #awaitMade} give the envelope with the binary.
   */
  public static Envelope pending(Metadata metadata, Completion completion) {
    Payload empty = Payload.empty();
    return new Envelope(Status.OK, metadata, empty, empty.sha256(), java.util.Objects.requireNonNull(completion));
  }

  /** Whether this envelope's binary is still to come ({@link #pending}). */
  public boolean isPending() {
    return completion != null;
  }

  /** Whether this envelope is pending with a binary made only when wanted ({@link Completion#madeWhenWanted}). */
  public boolean madeWhenWanted() {
    return completion != null && completion.madeWhenWanted();
  }

  /** This envelope; for a pending one, {@link Completion#awaitMade}. */
  public Envelope awaitMade() {
    return completion == null ? this : completion.awaitMade();
  }

  /**
   * This envelope; for a pending one, the complete one, waited for or made ({@link Completion#complete}).
   * @throws IllegalStateException if the binary cannot be made, saying why
   */
  public Envelope complete() {
    return completion == null ? this : completion.complete();
  }

  /** An envelope carrying a binary. */
  public static Envelope ok(Metadata metadata, Payload payload) {
    return new Envelope(Status.OK, metadata, payload, payload.sha256());
  }

  /** A root's plan to share its compile between ranks (the payload): never stored, never loaded. */
  public static Envelope share(Metadata metadata, Payload plan) {
    return new Envelope(Status.SHARE, metadata, plan, plan.sha256());
  }

  /** An envelope carrying a failure and no binary. */
  public static Envelope failure(Status status, Metadata metadata) {
    if (status == Status.OK || status == Status.SHARE) {
      throw new IllegalArgumentException("a failure envelope needs a failure status");
    }
    Payload empty = Payload.empty();
    return new Envelope(status, metadata, empty, empty.sha256());
  }

  /**
   * Assembles a received envelope and checks the payload against the header's length and digest.
   * @throws CorruptBinaryException if the payload does not match
   */
  public static Envelope received(Header header, Metadata metadata, Payload payload) {
    if (payload.length() != header.payloadLength()) {
      throw new CorruptBinaryException("binary length " + payload.length() + " does not match the header's "
          + header.payloadLength());
    }
    byte[] actual = payload.sha256();
    if (!MessageDigest.isEqual(actual, header.payloadSha256())) {
      throw new CorruptBinaryException("binary SHA-256 " + hex(actual) + " does not match the header's "
          + hex(header.payloadSha256()));
    }
    return new Envelope(header.status(), metadata, payload, actual);
  }

  /**
   * Assembles an envelope whose payload was checked block by block against the root's CRC32C values on
   * arrival; the header's SHA-256 (the root's) stays its identity.
   *
   * @throws CorruptBinaryException if the length does not match
   */
  static Envelope checkedInTransit(Header header, Metadata metadata, Payload payload) {
    if (payload.length() != header.payloadLength()) {
      throw new CorruptBinaryException("binary length " + payload.length() + " does not match the header's "
          + header.payloadLength());
    }
    return new Envelope(header.status(), metadata, payload, header.payloadSha256());
  }

  /** This envelope with a payload of its own, if its payload lives in a lent buffer; else itself. */
  public Envelope detached() {
    return payload.isLent() ? new Envelope(status, metadata, payload.detached(), payloadSha256) : this;
  }

  public Status status() {
    return status;
  }

  public Metadata metadata() {
    return metadata;
  }

  public Payload payload() {
    return payload;
  }

  /** The payload's SHA-256, as lowercase hex. */
  public String payloadSha256Hex() {
    return hex(payloadSha256);
  }

  /** Encodes the metadata, for sending after the header. */
  public byte[] encodeMetadata() {
    return metadata.encode();
  }

  /** Encodes the header for the given encoded metadata, into a direct buffer ready to broadcast. */
  public ByteBuffer encodeHeader(byte[] encodedMetadata) {
    ByteBuffer h = ByteBuffer.allocateDirect(HEADER_BYTES).order(ByteOrder.BIG_ENDIAN);
    h.put(MAGIC)
        .putShort((short) FORMAT_VERSION)
        .put((byte) status.code())
        .put((byte) 0)
        .putInt(encodedMetadata.length)
        .putLong(payload.length())
        .put(payloadSha256)
        .putInt(crc(encodedMetadata));
    h.putInt(crc(h.duplicate().position(0), HEADER_BYTES - 4));
    return h.flip();
  }

  /**
   * Decodes and checks a header: magic, version, CRC and lengths, before anything is allocated.
   *
   * @param maxPayloadBytes the largest payload this rank accepts
   * @throws CorruptBinaryException naming the check that failed
   */
  public static Header decodeHeader(ByteBuffer header, long maxPayloadBytes) {
    ByteBuffer h = header.duplicate().order(ByteOrder.BIG_ENDIAN);
    if (h.remaining() < HEADER_BYTES) {
      throw new CorruptBinaryException("binary is truncated: " + h.remaining() + " bytes, the header alone needs "
          + HEADER_BYTES);
    }
    int start = h.position();
    byte[] magic = new byte[MAGIC.length];
    h.get(magic);
    if (!Arrays.equals(magic, MAGIC)) {
      throw new CorruptBinaryException("not an mpi-build binary: magic is " + hex(magic) + ", expected "
          + hex(MAGIC) + " (\"MPIBUILD\")");
    }
    int version = Short.toUnsignedInt(h.getShort());
    if (version != FORMAT_VERSION) {
      throw new CorruptBinaryException("binary format version " + version + " is not supported (this library reads "
          + FORMAT_VERSION + ")");
    }
    int expectedCrc = h.getInt(start + HEADER_BYTES - 4);
    ByteBuffer covered = header.duplicate();
    covered.position(start);
    int actualCrc = crc(covered, HEADER_BYTES - 4);
    if (expectedCrc != actualCrc) {
      throw new CorruptBinaryException("binary header checksum mismatch: " + Integer.toHexString(actualCrc)
          + " computed, " + Integer.toHexString(expectedCrc) + " stored");
    }
    int statusCode = Byte.toUnsignedInt(h.get());
    h.get();
    int metadataLength = h.getInt();
    long payloadLength = h.getLong();
    byte[] sha = new byte[32];
    h.get(sha);
    int metadataCrc = h.getInt();
    if (metadataLength < 0 || metadataLength > MAX_METADATA_BYTES) {
      throw new CorruptBinaryException("binary metadata length " + metadataLength + " is outside 0.."
          + MAX_METADATA_BYTES);
    }
    if (payloadLength < 0 || payloadLength > maxPayloadBytes) {
      throw new CorruptBinaryException("binary length " + payloadLength + " is outside 0.." + maxPayloadBytes
          + " (raise MPI_BUILD_MAX_BINARY_BYTES if this binary is genuine)");
    }
    return new Header(Status.of(statusCode), metadataLength, payloadLength, sha, metadataCrc);
  }

  /**
   * Decodes metadata received after {@code header}.
   *
   * @throws CorruptBinaryException if its CRC or structure is wrong
   */
  public static Metadata decodeMetadata(Header header, byte[] encoded) {
    if (encoded.length != header.metadataLength()) {
      throw new CorruptBinaryException("binary metadata length " + encoded.length + " does not match the header's "
          + header.metadataLength());
    }
    int actual = crc(encoded);
    if (actual != header.metadataCrc()) {
      throw new CorruptBinaryException("binary metadata checksum mismatch: " + Integer.toHexString(actual)
          + " computed, " + Integer.toHexString(header.metadataCrc()) + " stored");
    }
    return Metadata.decode(encoded);
  }

  /** Serializes the whole envelope into one array. */
  public byte[] toBytes() {
    byte[] meta = encodeMetadata();
    long total = HEADER_BYTES + (long) meta.length + payload.length();
    if (total > Integer.MAX_VALUE - 8) {
      throw new IllegalStateException("binary of " + payload.length() + " bytes is too large for one Java array");
    }
    ByteBuffer out = ByteBuffer.allocate((int) total);
    out.put(encodeHeader(meta)).put(meta);
    payload.copyTo(out);
    return out.array();
  }

  /**
   * Parses and checks a whole serialized envelope: header, metadata, length and digest.
   *
   * @throws CorruptBinaryException naming the check that failed
   */
  public static Envelope fromBytes(byte[] bytes, long maxPayloadBytes) {
    ByteBuffer in = ByteBuffer.wrap(bytes);
    Header header = decodeHeader(in, maxPayloadBytes);
    long expected = HEADER_BYTES + (long) header.metadataLength() + header.payloadLength();
    if (bytes.length != expected) {
      throw new CorruptBinaryException("binary is " + bytes.length + " bytes, its header announces " + expected
          + (bytes.length < expected ? " (truncated)" : " (trailing bytes)"));
    }
    byte[] meta = Arrays.copyOfRange(bytes, HEADER_BYTES, HEADER_BYTES + header.metadataLength());
    Metadata metadata = decodeMetadata(header, meta);
    byte[] body = Arrays.copyOfRange(bytes, HEADER_BYTES + header.metadataLength(), bytes.length);
    return received(header, metadata, Payload.copyOf(body));
  }
}
