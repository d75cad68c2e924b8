package org.mpibuild.internal.protocol;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Supplier;
import org.mpibuild.internal.comm.DeadlineAllReduce;
import org.mpibuild.internal.protocol.AsyncBuilds.Mode;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.ForwardingCommunicator;

/**
 * A communicator the library thread uses: in thread mode, it passes every call on; in caller mode, every
 * MPI call (collective, message or abort) is posted to the {@link CallerQueue} for the program's thread, and a
 * blocking one waits until the program's thread has completed it.
 */
final class Posted extends ForwardingCommunicator implements DeadlineAllReduce.Announcing {
  private final Mode mode;
  private final CallerQueue calls;
  /** Arrivals announced on the program's thread for builds not yet at their first collective, in order. */
  private final ConcurrentLinkedQueue<DeadlineAllReduce.Arrivals> ahead = new ConcurrentLinkedQueue<>();
  /** Whether this wrapper made its communicator (a split), so that closing it frees that communicator. */
  private final boolean owns;

  Posted(Communicator inner, Mode mode, CallerQueue calls) {
    this(inner, mode, calls, false);
  }

  private Posted(Communicator inner, Mode mode, CallerQueue calls, boolean owns) {
    super(inner);
    this.mode = mode;
    this.calls = calls;
    this.owns = owns;
  }

  /**
   * On the program's thread, in caller mode: starts this rank's arrival messages for the next build now
   * ({@link DeadlineAllReduce#announce}); that build's first collective takes them ({@link #takeArrivals}).
   */
  void announceAhead() {
    if (inner.size() > 1) {
      ahead.add(DeadlineAllReduce.announce(new ForwardingCommunicator(inner) {
        @Override
        public Request iSend(ByteBuffer buffer, int dest, int tag) {
          return calls.startHere(() -> inner.iSend(buffer, dest, tag));
        }

        @Override
        public Request iReceive(ByteBuffer buffer, int source, int tag) {
          return calls.startHere(() -> inner.iReceive(buffer, source, tag));
        }
      }));
    }
  }

  @Override
  public DeadlineAllReduce.Arrivals takeArrivals() {
    return ahead.poll();
  }

  /** Starts the call here (thread mode) or posts it for the program's thread (caller mode). */
  private Request start(Supplier<Request> start) {
    return mode == Mode.THREAD ? start.get() : calls.post(start);
  }

  /** A blocking call, made where {@link #start} makes calls; the library thread sleeps until it is done. */
  private <T> T blocking(Supplier<T> call) {
    List<T> out = new ArrayList<>(1);
    start(() -> {
      out.add(call.get());
      return Request.COMPLETED;
    }).await();
    return out.get(0);
  }

  @Override
  public void broadcast(ByteBuffer buffer, int root) {
    start(() -> inner.iBroadcast(buffer, root)).await();
  }

  @Override
  public Request iBroadcast(ByteBuffer buffer, int root) {
    return start(() -> inner.iBroadcast(buffer, root));
  }

  @Override
  public Request iAllReduceMax(int[] values, int[] result) {
    return start(() -> inner.iAllReduceMax(values, result));
  }

  @Override
  public int[] allReduceMax(int[] values) {
    int[] out = new int[values.length];
    start(() -> inner.iAllReduceMax(values, out)).await();
    return out;
  }

  @Override
  public Request iSend(ByteBuffer buffer, int dest, int tag) {
    return start(() -> inner.iSend(buffer, dest, tag));
  }

  @Override
  public Request iReceive(ByteBuffer buffer, int source, int tag) {
    return start(() -> inner.iReceive(buffer, source, tag));
  }

  @Override
  public byte[][] allGather(byte[] mine) {
    return blocking(() -> inner.allGather(mine));
  }

  @Override
  public Communicator split(int color) {
    return new Posted(blocking(() -> inner.split(color)), mode, calls, true);
  }

  @Override
  public Communicator splitByNode() {
    return new Posted(blocking(inner::splitByNode), mode, calls, true);
  }

  @Override
  public void abort(String message, int errorCode) {
    blocking(() -> {
      inner.abort(message, errorCode);
      return null;
    });
  }

  @Override
  public void close() {
    if (owns) {
      blocking(() -> {
        inner.close();
        return null;
      });
    } // else the instance closes its own communicators
  }
}
