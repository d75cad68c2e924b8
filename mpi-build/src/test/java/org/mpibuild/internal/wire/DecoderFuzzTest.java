package org.mpibuild.internal.wire;

import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32C;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.mpibuild.CorruptBinaryException;
import org.mpibuild.internal.cache.EntryCodec;
import org.mpibuild.internal.cache.EntrySigning;

/**
 * Property tests of the two decoders that read untrusted bytes: the envelope (from the network, from
 * users' blobs) and the cache entry (from disk). Whatever the input, they return a checked value or throw
 * {@link CorruptBinaryException}; nothing else, and no allocation sized by a forged length.
 */
class DecoderFuzzTest {
  static final long MAX = 1 << 20;
  static final byte[] VALID = sample();
  static final String KEY = "5a".repeat(32);
  /** Entries are signed: the fuzz covers the signature trailer too. */
  static final EntrySigning SIGNING = EntrySigning.open(keyFile(), null);
  static final byte[] VALID_ENTRY = EntryCodec.encode(KEY, VALID, SIGNING);

  static java.nio.file.Path keyFile() {
    try {
      return java.nio.file.Files.createTempDirectory("mpi-build-fuzz").resolve("key");
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  static byte[] sample() {
    byte[] payload = new byte[700];
    for (int i = 0; i < payload.length; i++) {
      payload[i] = (byte) (i * 13);
    }
    return Envelope.ok(Envelope.Metadata.built("opencl", "device", List.of("a", "b"), "-O2", "log", "key", ""),
        Payload.copyOf(payload)).toBytes();
  }

  static void onlyTyped(Runnable r) {
    try {
      r.run();
    } catch (CorruptBinaryException expected) {
      // the one allowed failure
    }
  }

  @Property(tries = 3000)
  void randomBytesAreRefusedCleanly(@ForAll @Size(max = 600) byte[] bytes) {
    onlyTyped(() -> Envelope.fromBytes(bytes, MAX));
    onlyTyped(() -> EntryCodec.decode(KEY, bytes, SIGNING));
  }

  @Property(tries = 3000)
  void randomMetadataIsRefusedCleanly(@ForAll @Size(max = 300) byte[] bytes) {
    onlyTyped(() -> Envelope.Metadata.decode(bytes));
  }

  @Property(tries = 3000)
  void everySingleByteFlipIsDetected(@ForAll @IntRange(min = 0, max = 100_000) int where,
      @ForAll @IntRange(min = 1, max = 255) int mask) {
    byte[] envelope = VALID.clone();
    envelope[where % envelope.length] ^= (byte) mask;
    assertThrows(CorruptBinaryException.class, () -> Envelope.fromBytes(envelope, MAX));
    byte[] entry = VALID_ENTRY.clone();
    entry[where % entry.length] ^= (byte) mask;
    assertThrows(CorruptBinaryException.class, () -> EntryCodec.decode(KEY, entry, SIGNING));
  }

  @Property(tries = 1000)
  void everyTruncationIsDetected(@ForAll @IntRange(min = 0, max = 100_000) int cut) {
    byte[] envelope = Arrays.copyOf(VALID, cut % VALID.length);
    assertThrows(CorruptBinaryException.class, () -> Envelope.fromBytes(envelope, MAX));
    byte[] entry = Arrays.copyOf(VALID_ENTRY, cut % VALID_ENTRY.length);
    assertThrows(CorruptBinaryException.class, () -> EntryCodec.decode(KEY, entry, SIGNING));
  }

  @Property(tries = 1000)
  void forgedLengthsWithValidChecksumsAllocateNothing(@ForAll long payloadLength, @ForAll int metadataLength) {
    ByteBuffer h = ByteBuffer.wrap(Arrays.copyOf(VALID, Envelope.HEADER_BYTES));
    h.putInt(12, metadataLength).putLong(16, payloadLength);
    CRC32C crc = new CRC32C();
    crc.update(h.array(), 0, Envelope.HEADER_BYTES - 4);
    h.putInt(Envelope.HEADER_BYTES - 4, (int) crc.getValue());
    byte[] forged = Arrays.copyOf(h.array(), VALID.length);
    System.arraycopy(VALID, Envelope.HEADER_BYTES, forged, Envelope.HEADER_BYTES, VALID.length - Envelope.HEADER_BYTES);
    onlyTyped(() -> Envelope.fromBytes(forged, MAX));
    onlyTyped(() -> Envelope.decodeHeader(ByteBuffer.wrap(forged), MAX));
  }
}
