package org.mpibuild.internal.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.mpibuild.CorruptBinaryException;

class EnvelopeTest {
  static final Envelope.Metadata META = Envelope.Metadata.built("opencl", "platform=p; device=d",
      List.of("a", "b"), "-D X=1", "log ✓ unicode", "", "");

  static Envelope sample(int size, int chunk) {
    byte[] b = new byte[size];
    for (int i = 0; i < size; i++) {
      b[i] = (byte) (i * 31);
    }
    return Envelope.ok(META, Payload.copyOf(b));
  }

  @Test
  void roundTripKeepsEveryField() {
    Envelope e = sample(10_000, 777);
    Envelope back = Envelope.fromBytes(e.toBytes(), Long.MAX_VALUE);
    assertEquals(META, back.metadata());
    assertEquals(Envelope.Status.OK, back.status());
    assertArrayEquals(e.payload().toByteArray(), back.payload().toByteArray());
    assertEquals(e.payloadSha256Hex(), back.payloadSha256Hex());
  }

  @Test
  void piecesCoverThePayloadExactly() {
    Payload p = sample(10_000, 777).payload();
    List<ByteBuffer> pieces = p.pieces(100, 777);
    assertEquals(13, pieces.size());
    assertEquals((byte) (100 * 31), pieces.get(0).get(0), "the first piece starts at byte 100");
    assertEquals(10_000 - 100 - 12 * 777, pieces.get(12).remaining());
    assertEquals(List.of(777, 777, 777, 777, 777, 777, 777, 777, 777, 777, 777, 777, 10_000 - 100 - 12 * 777),
        Payload.pieceSizes(10_000, 777, 100));
    assertEquals(0, Payload.allocate(0).pieces(0, 5).size());
  }

  @Test
  void blockChecksAreTheCrc32cOfEachMebibyte() {
    byte[] b = new byte[Payload.CHECK_BLOCK_BYTES * 2 + 5];
    new java.util.Random(1).nextBytes(b);
    int[] checks = Payload.copyOf(b).blockChecks();
    assertEquals(3, checks.length);
    java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
    crc.update(b, Payload.CHECK_BLOCK_BYTES * 2, 5);
    assertEquals((int) crc.getValue(), checks[2]);
    assertArrayEquals(checks, Payload.decodeChecks(ByteBuffer.wrap(Payload.encodeChecks(checks))));
    byte[] table = Payload.encodeChecks(checks);
    table[3] ^= 1;
    assertEquals(null, Payload.decodeChecks(ByteBuffer.wrap(table)), "a corrupt table is refused");
    assertEquals(4 * 3 + 4, Payload.checksBytes(b.length));
  }

  @Test
  void failureEnvelopeCarriesLogAndMessage() {
    Envelope e = Envelope.failure(Envelope.Status.COMPILE_FAILED,
        Envelope.Metadata.failed("opencl", "t", List.of(), "", "error: x undeclared", "clBuildProgram failed", ""));
    Envelope back = Envelope.fromBytes(e.toBytes(), Long.MAX_VALUE);
    assertEquals(Envelope.Status.COMPILE_FAILED, back.status());
    assertEquals("error: x undeclared", back.metadata().buildLog());
    assertEquals(0, back.payload().length());
  }

  @Test
  void flippedPayloadByteIsCaughtByTheDigest() {
    byte[] bytes = sample(5000, 1000).toBytes();
    bytes[bytes.length - 100] ^= 0x40;
    CorruptBinaryException e = assertThrows(CorruptBinaryException.class, () -> Envelope.fromBytes(bytes, Long.MAX_VALUE));
    assertTrue(e.getMessage().contains("SHA-256"), e.getMessage());
  }

  @Test
  void truncationIsNamed() {
    byte[] bytes = sample(5000, 1000).toBytes();
    byte[] cut = Arrays.copyOf(bytes, bytes.length - 1);
    assertTrue(assertThrows(CorruptBinaryException.class, () -> Envelope.fromBytes(cut, Long.MAX_VALUE))
        .getMessage().contains("truncated"));
    byte[] tiny = Arrays.copyOf(bytes, 10);
    assertTrue(assertThrows(CorruptBinaryException.class, () -> Envelope.fromBytes(tiny, Long.MAX_VALUE))
        .getMessage().contains("truncated"));
  }

  @Test
  void wrongMagicIsRefused() {
    byte[] bytes = sample(100, 64).toBytes();
    bytes[0] = 'X';
    assertTrue(assertThrows(CorruptBinaryException.class, () -> Envelope.fromBytes(bytes, Long.MAX_VALUE))
        .getMessage().contains("magic"));
  }

  @Test
  void unknownVersionIsRefused() {
    byte[] bytes = sample(100, 64).toBytes();
    bytes[9] = 2;
    assertTrue(assertThrows(CorruptBinaryException.class, () -> Envelope.fromBytes(bytes, Long.MAX_VALUE))
        .getMessage().contains("version 2"));
  }

  @Test
  void headerAndMetadataCorruptionAreCaughtByChecksums() {
    byte[] header = sample(100, 64).toBytes();
    header[20] ^= 1; // payload length
    assertTrue(assertThrows(CorruptBinaryException.class, () -> Envelope.fromBytes(header, Long.MAX_VALUE))
        .getMessage().contains("header checksum"));
    byte[] meta = sample(100, 64).toBytes();
    meta[Envelope.HEADER_BYTES + 6] ^= 1;
    assertTrue(assertThrows(CorruptBinaryException.class, () -> Envelope.fromBytes(meta, Long.MAX_VALUE))
        .getMessage().contains("metadata checksum"));
  }

  @Test
  void absurdLengthsAreRefusedBeforeAllocating() {
    Envelope e = sample(5000, 1000);
    ByteBuffer header = e.encodeHeader(e.encodeMetadata());
    assertTrue(assertThrows(CorruptBinaryException.class, () -> Envelope.decodeHeader(header, 4999))
        .getMessage().contains("5000"));
  }

  @Test
  void aCutKeepsWholeCharactersAndStaysWithinItsLimit() {
    String text = "é€😀".repeat(1000);
    for (int max : new int[] {200, 201, 202, 203, 500, 1001}) {
      String cut = WireFields.cut(text, max, "log");
      assertTrue(cut.getBytes(java.nio.charset.StandardCharsets.UTF_8).length <= max, max + ": " + cut.length());
      assertFalse(cut.contains("\uFFFD"), "a character was split at " + max);
      assertTrue(cut.startsWith("é€") && cut.endsWith("😀"), "head or tail lost at " + max);
    }
    assertEquals("short", WireFields.cut("short", 10, "log"));
  }

  @Test
  void metadataOverTheReceiversLimitIsRefusedWhereItIsMade() {
    Envelope.Metadata huge = Envelope.Metadata.built("fake", "t", java.util.List.of(), "-D".repeat(40 << 20), "", "",
        "");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, huge::encode);
    assertTrue(e.getMessage().contains("exceeds the limit of " + Envelope.MAX_METADATA_BYTES), e.getMessage());
  }

  @Test
  void namedFactoriesFillTheFieldsTheyName() {
    Envelope.Metadata built = Envelope.Metadata.built("b", "t", List.of("k"), "-O2", "log", "key", "cc 1");
    assertEquals(List.of("b", "t", "[k]", "-O2", "log", "", "key", "cc 1"), fields(built));
    Envelope.Metadata failed = Envelope.Metadata.failed("b", "t", List.of("k"), "-O2", "log", "failed", "key");
    assertEquals(List.of("b", "t", "[k]", "-O2", "log", "failed", "key", ""), fields(failed));
    assertEquals(List.of("", "t", "[]", "", "log", "failed", "", ""),
        fields(Envelope.Metadata.failedFor("t", "log", "failed")));
    assertEquals(List.of("b", "", "[]", "", "", "failed", "", ""), fields(Envelope.Metadata.errorOnly("b", "failed")));
  }

  private static List<String> fields(Envelope.Metadata m) {
    return List.of(m.backend(), m.target(), m.kernelNames().toString(), m.options(), m.buildLog(), m.error(),
        m.cacheKey(), m.compiler());
  }
}
