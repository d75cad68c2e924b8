package org.mpibuild.internal;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.mpibuild.CorruptBinaryException;
import org.mpibuild.spi.Communicator;

/**
 * The envelope broadcast: a first message of fixed size carries the header (status, lengths, digest) and as
 * much metadata and binary as fit, so that a small kernel travels in one broadcast; the rest follows in
 * chunks of direct buffers. Receivers check the header before allocating and the digest before loading.
 * Every message is a non-blocking broadcast on every rank, waited for without spinning.
 */
final class EnvelopeBroadcast {
  private final Settings settings;

  EnvelopeBroadcast(Settings settings) {
    this.settings = settings;
  }

  /** What a receiver got: the header always, the rest unless it was corrupt. */
  static final class Received {
    Envelope.Header header;
    Envelope.Metadata metadata;
    Envelope envelope;
    String problem;
    long headerNanos;
  }

  /** Largest first message: header, metadata and the start of the binary travel together. */
  static final int INLINE_LIMIT = 64 << 10;

  /**
   * The size of the first message: the header, then as much metadata and binary as fit, so that a small
   * kernel travels in one broadcast. Never more than the chunk size, never less than the header.
   */
  private int firstMessageBytes() {
    return Math.max(Envelope.HEADER_BYTES, Math.min(INLINE_LIMIT, settings.chunkBytes()));
  }

  /** How many metadata and binary bytes the first message carries, computed alike on every rank. */
  private record Inline(int metadata, int payload) {
    static Inline of(int first, int metadataLength, long payloadLength) {
      int meta = Math.min(metadataLength, first - Envelope.HEADER_BYTES);
      int payload = meta == metadataLength ? (int) Math.min(payloadLength, first - Envelope.HEADER_BYTES - meta) : 0;
      return new Inline(meta, payload);
    }
  }

  /** Sends {@code sent} from {@code root}, or receives it; null on the root. Collective. */
  Received broadcast(Communicator comm, Envelope sent, int root) {
    boolean isRoot = comm.rank() == root;
    int first = firstMessageBytes();
    ByteBuffer message = ByteBuffer.allocateDirect(first);
    if (isRoot) {
      byte[] meta = sent.encodeMetadata();
      Payload payload = sent.payload().rechunk(settings.chunkBytes());
      Inline inline = Inline.of(first, meta.length, payload.length());
      message.put(sent.encodeHeader(meta)).put(meta, 0, inline.metadata());
      payload.copyTo(message.slice().limit(inline.payload()));
      // Every message is a non-blocking broadcast on every rank (MPI never matches a blocking collective
      // with a non-blocking one), all started at once and waited for without spinning.
      List<Communicator.Request> started = new ArrayList<>();
      started.add(comm.iBroadcast(message.clear(), root));
      ByteBuffer rest = ByteBuffer.allocateDirect(meta.length - inline.metadata()).put(meta, inline.metadata(),
          meta.length - inline.metadata()).flip();
      for (ByteBuffer chunk : chunksOf(rest)) {
        started.add(comm.iBroadcast(chunk, root));
      }
      for (ByteBuffer piece : payload.pieces(inline.payload())) {
        started.add(comm.iBroadcast(piece, root));
      }
      started.forEach(EnvelopeBroadcast::awaitIdly);
      return null;
    }

    // The first message may wait for a compile. Wait without spinning, so that the waiting ranks leave
    // the cores to the compiles (MPI's blocking calls poll at full speed).
    awaitIdly(comm.iBroadcast(message, root));
    Received r = new Received();
    r.headerNanos = System.nanoTime();
    try {
      r.header = Envelope.decodeHeader(message.duplicate().limit(Envelope.HEADER_BYTES), Long.MAX_VALUE);
    } catch (CorruptBinaryException e) {
      // Without a trustworthy header this rank cannot know how many chunks follow, so it cannot keep in
      // step with the others. Ending the job is the only way to leave nobody waiting.
      comm.abort("mpi-build: rank " + comm.rank() + " received a corrupt header from root " + root + ": "
          + e.getMessage(), 3);
      throw e;
    }
    Inline inline = Inline.of(first, r.header.metadataLength(), r.header.payloadLength());
    ByteBuffer metaBuf = ByteBuffer.allocateDirect(r.header.metadataLength());
    metaBuf.put(message.duplicate().position(Envelope.HEADER_BYTES).limit(Envelope.HEADER_BYTES + inline.metadata()));
    List<Communicator.Request> started = new ArrayList<>();
    for (ByteBuffer chunk : chunksOf(metaBuf.slice())) {
      started.add(comm.iBroadcast(chunk, root));
    }
    long length = r.header.payloadLength();
    ByteBuffer inlinePayload = message.duplicate().position(Envelope.HEADER_BYTES + inline.metadata())
        .limit(Envelope.HEADER_BYTES + inline.metadata() + inline.payload());
    Payload payload = null;
    if (length > settings.maxBinaryBytes()) {
      started.forEach(EnvelopeBroadcast::awaitIdly);
      started.clear();
      // Keep in step with a bounded scratch buffer, one piece at a time, then refuse the binary.
      ByteBuffer scratch = ByteBuffer.allocateDirect((int) Math.min(settings.chunkBytes(), length));
      for (int size : Payload.pieceSizes(length, settings.chunkBytes(), inline.payload())) {
        awaitIdly(comm.iBroadcast(scratch.clear().limit(size), root));
      }
    } else {
      payload = Payload.allocate(length, settings.chunkBytes());
      payload.copyFrom(inlinePayload);
      for (ByteBuffer piece : payload.pieces(inline.payload())) {
        started.add(comm.iBroadcast(piece, root));
      }
    }
    started.forEach(EnvelopeBroadcast::awaitIdly);
    try {
      byte[] m = new byte[metaBuf.capacity()];
      metaBuf.duplicate().clear().get(m);
      r.metadata = Envelope.decodeMetadata(r.header, m);
    } catch (CorruptBinaryException e) {
      r.problem = e.getMessage();
    }
    if (payload == null) {
      r.problem = "binary of " + length + " bytes exceeds this rank's limit of " + settings.maxBinaryBytes()
          + " (MPI_BUILD_MAX_BINARY_BYTES)";
      return r;
    }
    if (r.problem == null) {
      try {
        r.envelope = Envelope.received(r.header, r.metadata, payload);
      } catch (CorruptBinaryException e) {
        r.problem = e.getMessage();
      }
    }
    return r;
  }

  /**
   * Waits for a request while leaving the core to others: a short spin, then sleeps that grow to 1 ms.
   * A rank waiting for another rank's compile then costs no CPU, which matters when ranks share cores
   * with compiles (oversubscribed nodes, batch builds with a compile on every rank).
   */
  static void awaitIdly(Communicator.Request request) {
    long spinUntil = System.nanoTime() + 50_000;
    long sleep = 10_000;
    while (!request.test()) {
      if (System.nanoTime() < spinUntil) {
        Thread.onSpinWait();
      } else {
        LockSupport.parkNanos(sleep);
        sleep = Math.min(sleep * 2, 1_000_000);
      }
    }
  }

  private List<ByteBuffer> chunksOf(ByteBuffer whole) {
    List<ByteBuffer> out = new ArrayList<>();
    for (int pos = 0; pos < whole.limit(); pos += settings.chunkBytes()) {
      int end = (int) Math.min((long) pos + settings.chunkBytes(), whole.limit());
      out.add(whole.duplicate().position(pos).limit(end).slice());
    }
    return out;
  }
}
