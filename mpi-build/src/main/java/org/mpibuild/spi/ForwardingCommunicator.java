package org.mpibuild.spi;

import java.nio.ByteBuffer;

/**
 * A communicator that passes every call to another; subclasses change what they need (a borrowed
 * communicator that is never closed, a test double that corrupts what it carries).
 */
public abstract class ForwardingCommunicator implements Communicator {
  /** The communicator every call goes to. */
  protected final Communicator inner;

  /**
   * Forwards every call to {@code inner}.
   *
   * @param inner the communicator to forward to
   */
  protected ForwardingCommunicator(Communicator inner) {
    this.inner = inner;
  }

  @Override
  public int rank() {
    return inner.rank();
  }

  @Override
  public int size() {
    return inner.size();
  }

  @Override
  public void broadcast(ByteBuffer buffer, int root) {
    inner.broadcast(buffer, root);
  }

  @Override
  public int[] allReduceMax(int[] values) {
    return inner.allReduceMax(values);
  }

  @Override
  public byte[][] allGather(byte[] mine) {
    return inner.allGather(mine);
  }

  @Override
  public Request iBroadcast(ByteBuffer buffer, int root) {
    return inner.iBroadcast(buffer, root);
  }

  @Override
  public Request iAllReduceMax(int[] values, int[] result) {
    return inner.iAllReduceMax(values, result);
  }

  @Override
  public Request iAllReduce(ByteBuffer send, ByteBuffer receive, int count, Datatype type, ReduceOp op) {
    return inner.iAllReduce(send, receive, count, type, op);
  }

  @Override
  public void allReduce(ByteBuffer send, ByteBuffer receive, int count, Datatype type, ReduceOp op) {
    inner.allReduce(send, receive, count, type, op);
  }

  @Override
  public PersistentRequest broadcastInit(ByteBuffer buffer, int root) {
    return inner.broadcastInit(buffer, root);
  }

  @Override
  public PersistentRequest allReduceInit(ByteBuffer send, ByteBuffer receive, int count, Datatype type,
      ReduceOp op) {
    return inner.allReduceInit(send, receive, count, type, op);
  }

  @Override
  public String persistentCollectives() {
    return inner.persistentCollectives();
  }

  @Override
  public Request iSend(ByteBuffer buffer, int dest, int tag) {
    return inner.iSend(buffer, dest, tag);
  }

  @Override
  public Request iReceive(ByteBuffer buffer, int source, int tag) {
    return inner.iReceive(buffer, source, tag);
  }

  @Override
  public Communicator split(int color) {
    return inner.split(color);
  }

  @Override
  public ThreadLevel threadLevel() {
    return inner.threadLevel();
  }

  @Override
  public Communicator splitByNode() {
    return inner.splitByNode();
  }

  @Override
  public void abort(String message, int errorCode) {
    inner.abort(message, errorCode);
  }

  @Override
  public String description() {
    return inner.description();
  }

  @Override
  public void close() {
    inner.close();
  }
}
