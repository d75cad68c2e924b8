package org.mpibuild.testkit;

import java.nio.ByteBuffer;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.ForwardingCommunicator;

/**
 * For fault tests: flips one byte of the n-th broadcast (1-based, blocking or not) that this rank takes
 * part in, once it has arrived, as a bad link or bad memory would. The protocol must catch it by digest.
 */
public final class CorruptingCommunicator extends ForwardingCommunicator {
  private final int target;
  private int count;

  /** Corrupts the {@code target}-th broadcast of {@code inner}. */
  public CorruptingCommunicator(Communicator inner, int target) {
    super(inner);
    this.target = target;
  }

  @Override
  public void broadcast(ByteBuffer buffer, int root) {
    iBroadcast(buffer, root).await();
  }

  @Override
  public Request iBroadcast(ByteBuffer buffer, int root) {
    Request r = inner.iBroadcast(buffer, root);
    boolean corrupt = ++count == target;
    return new Request() {
      private boolean done;

      @Override
      public boolean test() {
        if (r.test()) {
          arrived();
          return true;
        }
        return false;
      }

      @Override
      public void await() {
        r.await();
        arrived();
      }

      private void arrived() {
        if (corrupt && !done) {
          done = true;
          int at = buffer.position();
          buffer.put(at, (byte) (buffer.get(at) ^ 0x01));
        }
      }
    };
  }

  /** Leaves the wrapped communicator open: its owner closes it. */
  @Override
  public void close() {}
}
