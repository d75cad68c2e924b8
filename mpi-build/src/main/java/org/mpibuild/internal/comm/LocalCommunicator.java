package org.mpibuild.internal.comm;

import java.nio.ByteBuffer;
import org.mpibuild.spi.Communicator;

/** A communicator of one rank, for programs run without MPI. Every collective is trivial. */
public final class LocalCommunicator implements Communicator {
  @Override
  public int rank() {
    return 0;
  }

  @Override
  public int size() {
    return 1;
  }

  @Override
  public void broadcast(ByteBuffer buffer, int root) {
    if (root != 0) {
      throw new IllegalArgumentException("root " + root + " is out of range for a local communicator");
    }
  }

  @Override
  public int[] allReduceMax(int[] values) {
    return values.clone();
  }

  @Override
  public byte[][] allGather(byte[] mine) {
    return new byte[][] {mine.clone()};
  }

  /** One rank: the result is this rank's values. */
  @Override
  public Request iAllReduce(ByteBuffer send, ByteBuffer receive, int count, Datatype type, ReduceOp op) {
    int bytes = Communicator.reductionBytes(send, receive, count, type);
    receive.duplicate().put(send.duplicate().limit(send.position() + bytes));
    return Request.COMPLETED;
  }

  @Override
  public Communicator splitByNode() {
    return new LocalCommunicator();
  }

  @Override
  public Communicator split(int color) {
    return new LocalCommunicator();
  }

  @Override
  public void abort(String message, int errorCode) {
    System.err.println(message);
    Runtime.getRuntime().halt(errorCode);
  }

  @Override
  public String description() {
    return "local (no MPI), 1 rank";
  }
}
