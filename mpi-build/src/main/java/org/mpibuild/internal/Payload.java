package org.mpibuild.internal;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;

/**
 * A binary held in direct buffers of at most one chunk each, so that it can be broadcast without
 * copies, in MPI-sized pieces, whatever its total length.
 */
public final class Payload {
  private final ByteBuffer[] chunks;
  private final long length;
  private final int chunkBytes;

  private Payload(ByteBuffer[] chunks, long length, int chunkBytes) {
    this.chunks = chunks;
    this.length = length;
    this.chunkBytes = chunkBytes;
  }

  /** Returns an empty payload. */
  public static Payload empty() {
    return new Payload(new ByteBuffer[0], 0, 1);
  }

  /** Copies {@code bytes} into direct chunks of at most {@code chunkBytes} bytes. */
  public static Payload copyOf(byte[] bytes, int chunkBytes) {
    Payload p = allocate(bytes.length, chunkBytes);
    int offset = 0;
    for (ByteBuffer c : p.chunks) {
      int n = c.remaining();
      c.put(bytes, offset, n).flip();
      offset += n;
    }
    return p;
  }

  /** Allocates zeroed direct chunks for {@code length} bytes. */
  public static Payload allocate(long length, int chunkBytes) {
    if (length < 0) {
      throw new IllegalArgumentException("payload length " + length + " is negative");
    }
    if (chunkBytes <= 0) {
      throw new IllegalArgumentException("chunk size " + chunkBytes + " must be positive");
    }
    long count = (length + chunkBytes - 1) / chunkBytes;
    if (count > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("payload of " + length + " bytes needs too many chunks of " + chunkBytes);
    }
    ByteBuffer[] chunks = new ByteBuffer[(int) count];
    long left = length;
    for (int i = 0; i < chunks.length; i++) {
      int n = (int) Math.min(chunkBytes, left);
      chunks[i] = ByteBuffer.allocateDirect(n);
      left -= n;
    }
    return new Payload(chunks, length, chunkBytes);
  }

  /** Returns the chunks; each buffer's position is 0 and its limit is its length. */
  public ByteBuffer[] chunks() {
    ByteBuffer[] views = new ByteBuffer[chunks.length];
    for (int i = 0; i < chunks.length; i++) {
      views[i] = chunks[i].duplicate().clear();
    }
    return views;
  }

  /** Returns this payload in chunks of {@code bytes}: itself if already so, else a copy. */
  public Payload rechunk(int bytes) {
    if (bytes == chunkBytes || length == 0) {
      return this;
    }
    if (length > Integer.MAX_VALUE - 8) {
      Payload p = allocate(length, bytes);
      ByteBuffer[] to = p.chunks();
      int t = 0;
      for (ByteBuffer from : chunks()) {
        while (from.hasRemaining()) {
          int n = Math.min(from.remaining(), to[t].remaining());
          to[t].put(from.duplicate().limit(from.position() + n));
          from.position(from.position() + n);
          if (!to[t].hasRemaining()) {
            t++;
          }
        }
      }
      return p;
    }
    return copyOf(toByteArray(), bytes);
  }

  /** Slices of the chunks covering bytes {@code from} to the end, none longer than a chunk. */
  public List<ByteBuffer> pieces(long from) {
    List<ByteBuffer> out = new java.util.ArrayList<>();
    long start = 0;
    for (ByteBuffer c : chunks()) {
      long end = start + c.remaining();
      if (end > from) {
        out.add(c.position((int) Math.max(0, from - start)).slice());
      }
      start = end;
    }
    return out;
  }

  /** The sizes of {@link #pieces(long)} for a payload of {@code length} bytes in chunks of {@code chunkBytes}. */
  public static List<Integer> pieceSizes(long length, int chunkBytes, long from) {
    List<Integer> out = new java.util.ArrayList<>();
    for (long start = 0; start < length; start += chunkBytes) {
      long end = Math.min(length, start + chunkBytes);
      if (end > from) {
        out.add((int) (end - Math.max(start, from)));
      }
    }
    return out;
  }

  /** Copies the first {@code dst.remaining()} bytes of the payload into {@code dst}. */
  public void copyTo(ByteBuffer dst) {
    for (ByteBuffer c : chunks()) {
      if (!dst.hasRemaining()) {
        return;
      }
      dst.put(c.limit(Math.min(c.limit(), dst.remaining())));
    }
  }

  /** Copies {@code src}'s remaining bytes to the start of the payload. */
  public void copyFrom(ByteBuffer src) {
    ByteBuffer in = src.duplicate();
    for (ByteBuffer c : chunks()) {
      if (!in.hasRemaining()) {
        return;
      }
      int n = Math.min(c.remaining(), in.remaining());
      c.put(in.duplicate().limit(in.position() + n));
      in.position(in.position() + n);
    }
  }

  /** Returns the total length in bytes. */
  public long length() {
    return length;
  }

  /** Returns the SHA-256 digest of the bytes. */
  public byte[] sha256() {
    MessageDigest md = sha256Digest();
    for (ByteBuffer c : chunks()) {
      md.update(c);
    }
    return md.digest();
  }

  /** Copies the bytes into one array. */
  public byte[] toByteArray() {
    if (length > Integer.MAX_VALUE - 8) {
      throw new IllegalStateException("binary of " + length + " bytes is too large for one Java array");
    }
    byte[] out = new byte[(int) length];
    int offset = 0;
    for (ByteBuffer c : chunks()) {
      int n = c.remaining();
      c.get(out, offset, n);
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
