package org.mpibuild.internal.wire;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.mpibuild.CorruptBinaryException;

/**
 * The payload of a root's plan to share its compile ({@link Envelope#share}): the number of parts, then each part
 * as a length-prefixed UTF-8 string ({@link WireFields#utf8}).
 */
public final class SharePlan {
  /** The most parts a plan may hold: more than any job shares a compile between. */
  static final int MAX_PARTS = 1 << 16;

  private SharePlan() {}

  /** The plan's payload for {@code parts}. */
  public static byte[] encode(List<String> parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(ByteBuffer.allocate(4).putInt(parts.size()).array());
    parts.forEach(p -> out.writeBytes(WireFields.utf8(p)));
    return out.toByteArray();
  }

  /**
   * The parts of a plan that arrived whole.
   *
   * @throws CorruptBinaryException if the plan does not decode: a count or length beyond what it holds
   */
  public static List<String> parts(Envelope plan) {
    ByteBuffer in = ByteBuffer.wrap(plan.payload().toByteArray());
    if (in.remaining() < 4) {
      throw new CorruptBinaryException("a shared compile's plan ends early");
    }
    int count = in.getInt();
    if (count < 2 || count > MAX_PARTS) {
      throw new CorruptBinaryException("a shared compile's plan names " + count + " parts");
    }
    List<String> out = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      if (in.remaining() < 4) {
        throw new CorruptBinaryException("a shared compile's plan ends early, at part " + i);
      }
      try {
        out.add(WireFields.readUtf8(in));
      } catch (CorruptBinaryException e) {
        throw new CorruptBinaryException("part " + i + " of a shared compile's plan: " + e.getMessage());
      }
    }
    if (in.hasRemaining()) {
      throw new CorruptBinaryException("a shared compile's plan has " + in.remaining() + " bytes after its parts");
    }
    return out;
  }
}
