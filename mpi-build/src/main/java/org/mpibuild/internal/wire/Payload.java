package org.mpibuild.internal.wire;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.zip.CRC32C;

/**
 * A binary in direct memory: one region when it fits one buffer (every binary below 1 GiB), so that a
 * backend can load it in place; more regions beyond that. The broadcast cuts it into pieces of any size
 * without copying.
 *
 * <p>A received payload may live in a buffer lent by the broadcast's pool; {@link #release()} gives it
 * back once nothing reads it any more (the kernel that holds it is closed).
 */
public final class Payload {
  /** Largest region: one direct buffer. */
  static final int REGION_BYTES = 1 << 30;
  /** Bytes covered by one CRC32C in {@link #blockChecks()}: what a receiver checks as a unit. */
  public static final int CHECK_BLOCK_BYTES = 1 << 20;

  private final ByteBuffer[] regions;
  private final long length;
  private volatile int[] checks;
  private Runnable release;

  private Payload(ByteBuffer[] regions, long length, Runnable release) {
    this.regions = regions;
    this.length = length;
    this.release = release;
  }

  /** Returns an empty payload. */
  public static Payload empty() {
    return new Payload(new ByteBuffer[0], 0, null);
  }

  /** Copies {@code bytes} into direct memory. */
  public static Payload copyOf(byte[] bytes) {
    Payload p = allocate(bytes.length);
    p.copyFrom(ByteBuffer.wrap(bytes));
    return p;
  }

  /** Allocates zeroed direct memory for {@code length} bytes. */
  public static Payload allocate(long length) {
    if (length < 0) {
      throw new IllegalArgumentException("payload length " + length + " is negative");
    }
    ByteBuffer[] regions = new ByteBuffer[(int) ((length + REGION_BYTES - 1) / REGION_BYTES)];
    long left = length;
    for (int i = 0; i < regions.length; i++) {
      int n = (int) Math.min(REGION_BYTES, left);
      regions[i] = ByteBuffer.allocateDirect(n);
      left -= n;
    }
    return new Payload(regions, length, null);
  }

  /**
   * A payload over the first {@code length} bytes of a lent buffer, which {@code release} gives back.
   * The bytes are not cleared: the caller overwrites all of them before anyone reads them.
   */
  public static Payload lent(ByteBuffer buffer, int length, Runnable release) {
    return new Payload(new ByteBuffer[] {buffer.duplicate().clear().limit(length).slice()}, length, release);
  }

  /** Gives a lent buffer back to its pool; nothing may read this payload afterwards. Idempotent. */
  public synchronized void release() {
    Runnable r = release;
    release = null;
    if (r != null) {
      r.run();
    }
  }

  /** Whether this payload lives in a lent buffer that {@link #release()} would give back. */
  public synchronized boolean isLent() {
    return release != null;
  }

  /** A copy in memory of its own, for holders that outlive the lender. */
  public Payload detached() {
    Payload p = allocate(length);
    ByteBuffer[] to = p.regions();
    ByteBuffer[] from = regions();
    for (int i = 0; i < from.length; i++) {
      to[i].put(from[i]);
    }
    p.checks = checks;
    return p;
  }

  /** Returns the regions; each view's position is 0 and its limit is its length. */
  ByteBuffer[] regions() {
    ByteBuffer[] views = new ByteBuffer[regions.length];
    for (int i = 0; i < regions.length; i++) {
      views[i] = regions[i].duplicate().clear();
    }
    return views;
  }

  /** The whole binary as one read-only buffer, when it lies in one region. */
  public Optional<ByteBuffer> contiguous() {
    if (regions.length == 0) {
      return Optional.of(ByteBuffer.allocateDirect(0));
    }
    return regions.length == 1 ? Optional.of(regions[0].asReadOnlyBuffer().clear()) : Optional.empty();
  }

  /** Slices covering bytes {@code from} to the end, none longer than {@code pieceBytes}, nor crossing a region. */
  public List<ByteBuffer> pieces(long from, int pieceBytes) {
    List<ByteBuffer> out = new ArrayList<>();
    long start = 0;
    for (ByteBuffer r : regions()) {
      long end = start + r.limit();
      if (end > from) {
        out.addAll(slices(r, (int) Math.max(0, from - start), pieceBytes));
      }
      start = end;
    }
    return out;
  }

  /** Slices of {@code whole} from byte {@code from} to its limit, none longer than {@code pieceBytes}. */
  static List<ByteBuffer> slices(ByteBuffer whole, int from, int pieceBytes) {
    List<ByteBuffer> out = new ArrayList<>();
    for (long p = from; p < whole.limit(); p += pieceBytes) {
      out.add(whole.duplicate().position((int) p).limit((int) Math.min(whole.limit(), p + pieceBytes)).slice());
    }
    return out;
  }

  /** The sizes of {@link #pieces(long, int)} for a payload of {@code length} bytes. */
  public static List<Integer> pieceSizes(long length, int pieceBytes, long from) {
    List<Integer> out = new ArrayList<>();
    for (long start = 0; start < length; start += REGION_BYTES) {
      long end = Math.min(length, start + REGION_BYTES);
      for (long p = Math.max(start, from); p < end; p += pieceBytes) {
        out.add((int) Math.min(pieceBytes, end - p));
      }
    }
    return out;
  }

  /** Copies the first {@code dst.remaining()} bytes of the payload into {@code dst}. */
  public void copyTo(ByteBuffer dst) {
    for (ByteBuffer r : regions()) {
      if (!dst.hasRemaining()) {
        return;
      }
      dst.put(r.limit(Math.min(r.limit(), dst.remaining())));
    }
  }

  /** Copies {@code src}'s remaining bytes to the start of the payload. */
  public void copyFrom(ByteBuffer src) {
    ByteBuffer in = src.duplicate();
    for (ByteBuffer r : regions()) {
      if (!in.hasRemaining()) {
        return;
      }
      int n = Math.min(r.remaining(), in.remaining());
      r.put(in.duplicate().limit(in.position() + n));
      in.position(in.position() + n);
    }
  }

  /** Returns the total length in bytes. */
  public long length() {
    return length;
  }

  /**
   * Returns the SHA-256 digest of the bytes. The same pass computes the {@link #blockChecks()}, one block at
   * a time while it is in the processor's cache, so that the root never reads its binary twice.
   */
  public byte[] sha256() {
    MessageDigest md = sha256Digest();
    int[] c = new int[blockCount(length)];
    for (int b = 0; b < c.length; b++) {
      long start = (long) b * CHECK_BLOCK_BYTES;
      int off = (int) (start % REGION_BYTES);
      ByteBuffer block = regions[(int) (start / REGION_BYTES)].duplicate().limit(off + blockBytes(b)).position(off);
      CRC32C crc = new CRC32C();
      crc.update(block.duplicate());
      md.update(block);
      c[b] = (int) crc.getValue();
    }
    checks = c;
    return md.digest();
  }

  /** How many check blocks a payload of {@code length} bytes has. */
  public static int blockCount(long length) {
    long n = (length + CHECK_BLOCK_BYTES - 1) / CHECK_BLOCK_BYTES;
    if (n > Integer.MAX_VALUE / 4) {
      throw new IllegalArgumentException("payload of " + length + " bytes has too many check blocks");
    }
    return (int) n;
  }

  /** The CRC32C of every {@link #CHECK_BLOCK_BYTES} block, in order; computed once. */
  public int[] blockChecks() {
    int[] c = checks;
    if (c == null) {
      c = new int[blockCount(length)];
      for (int b = 0; b < c.length; b++) {
        c[b] = blockCheck(b, 0, blockBytes(b));
      }
      checks = c;
    }
    return c.clone();
  }

  /** The length of block {@code b}. */
  int blockBytes(int b) {
    return (int) Math.min(CHECK_BLOCK_BYTES, length - (long) b * CHECK_BLOCK_BYTES);
  }

  /** The CRC32C of bytes {@code from} to {@code to} of block {@code b}, continuing {@code crc} (0 to start). */
  int blockCheck(int b, int from, int to) {
    return blockCheck(b, from, to, new CRC32C());
  }

  int blockCheck(int b, int from, int to, CRC32C crc) {
    long start = (long) b * CHECK_BLOCK_BYTES + from;
    ByteBuffer r = regions[(int) (start / REGION_BYTES)].duplicate();
    int off = (int) (start % REGION_BYTES);
    crc.update(r.limit(off + (to - from)).position(off));
    return (int) crc.getValue();
  }

  /** The check table as sent: every block's CRC32C, big-endian, then the CRC32C of those bytes. */
  static byte[] encodeChecks(int[] checks) {
    ByteBuffer out = ByteBuffer.allocate(4 * checks.length + 4).order(ByteOrder.BIG_ENDIAN);
    for (int c : checks) {
      out.putInt(c);
    }
    CRC32C crc = new CRC32C();
    crc.update(out.array(), 0, 4 * checks.length);
    return out.putInt((int) crc.getValue()).array();
  }

  /** Bytes of the check table for a payload of {@code length} bytes. */
  static long checksBytes(long length) {
    return 4L * blockCount(length) + 4;
  }

  /** Reads a check table; null if its own CRC32C does not match. */
  static int[] decodeChecks(ByteBuffer table) {
    ByteBuffer in = table.duplicate().order(ByteOrder.BIG_ENDIAN);
    int n = (in.remaining() - 4) / 4;
    CRC32C crc = new CRC32C();
    crc.update(in.duplicate().limit(in.position() + 4 * n));
    int[] out = new int[n];
    for (int i = 0; i < n; i++) {
      out[i] = in.getInt();
    }
    return in.getInt() == (int) crc.getValue() ? out : null;
  }

  /** Copies the bytes into one array. */
  public byte[] toByteArray() {
    if (length > Integer.MAX_VALUE - 8) {
      throw new IllegalStateException("binary of " + length + " bytes is too large for one Java array");
    }
    byte[] out = new byte[(int) length];
    int offset = 0;
    for (ByteBuffer r : regions()) {
      int n = r.remaining();
      r.get(out, offset, n);
      offset += n;
    }
    return out;
  }

  public static MessageDigest sha256Digest() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("this JVM has no SHA-256", e);
    }
  }
}
