package org.mpibuild.testkit;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Request;

/**
 * The contract's typed all-reduces: every type with every operation, blocking and not, checked against
 * {@link Reductions}; buffers MPI would overrun refused; one pending with a broadcast.
 */
final class TypedAllReduceChecks extends ContractCheck {
  TypedAllReduceChecks(Communicator comm) {
    super(comm);
  }

  /**
   * Every type with every operation, all started before any is awaited, then awaited in the reverse order:
   * each result equals what {@link Reductions} computes from every rank's values, in the receive buffer's
   * window only, and the send buffer is left as it was.
   */
  void typedAllReducesOfEveryTypeAndOperation() {
    int count = 5;
    List<Object[]> started = new ArrayList<>();
    for (Communicator.Datatype type : Communicator.Datatype.values()) {
      for (Communicator.ReduceOp op : Communicator.ReduceOp.values()) {
        byte[] mine = typedValues(rank, count, type, 0);
        ByteBuffer send = typedBuffer(mine);
        ByteBuffer receive = typedBuffer(new byte[mine.length]);
        Request r = comm.iAllReduce(send, receive, count, type, op);
        that(r != null, "iAllReduce", "returned a null request");
        started.add(new Object[] {type, op, send, receive, r, mine});
      }
    }
    for (int i = started.size() - 1; i >= 0; i--) {
      Object[] s = started.get(i);
      ((Request) s[4]).await();
    }
    for (Object[] s : started) {
      Communicator.Datatype type = (Communicator.Datatype) s[0];
      Communicator.ReduceOp op = (Communicator.ReduceOp) s[1];
      String what = op + " of " + count + " " + type;
      checkTyped((ByteBuffer) s[3], typedExpected(count, type, op, 0), "iAllReduce", what);
      checkTyped((ByteBuffer) s[2], (byte[]) s[5], "iAllReduce", what + " (the send buffer)");
    }
  }

  /**
   * The blocking all-reduce ({@code MPI_Allreduce}) of every type with every operation, on other values than
   * the non-blocking ones': each result right, in the receive buffer's window only, the send buffer as it was.
   */
  void blockingTypedAllReducesOfEveryTypeAndOperation() {
    int count = 3;
    for (Communicator.Datatype type : Communicator.Datatype.values()) {
      for (Communicator.ReduceOp op : Communicator.ReduceOp.values()) {
        byte[] mine = typedValues(rank, count, type, 1);
        ByteBuffer send = typedBuffer(mine);
        ByteBuffer receive = typedBuffer(new byte[mine.length]);
        comm.allReduce(send, receive, count, type, op);
        String what = op + " of " + count + " " + type;
        checkTyped(receive, typedExpected(count, type, op, 1), "allReduce", what);
        checkTyped(send, mine, "allReduce", what + " (the send buffer)");
      }
    }
  }

  /** Heap buffers, and counts beyond a buffer's remaining bytes, are refused on every rank before any call. */
  void typedAllReducesRefuseWhatMpiWouldOverrun() {
    ByteBuffer direct = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
    ByteBuffer other = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
    refused(() -> comm.iAllReduce(ByteBuffer.allocate(16), other, 2, Communicator.Datatype.LONG,
        Communicator.ReduceOp.SUM), "a heap send buffer");
    refused(() -> comm.iAllReduce(direct, ByteBuffer.allocate(16), 2, Communicator.Datatype.LONG,
        Communicator.ReduceOp.SUM), "a heap receive buffer");
    refused(() -> comm.iAllReduce(direct, other, 3, Communicator.Datatype.LONG, Communicator.ReduceOp.SUM),
        "3 longs in 16-byte buffers");
    refused(() -> comm.iAllReduce(direct, other.position(12), 2, Communicator.Datatype.INT,
        Communicator.ReduceOp.MAX), "2 ints into 4 remaining bytes");
    other.position(0);
    refused(() -> comm.allReduce(ByteBuffer.allocate(16), other, 2, Communicator.Datatype.LONG,
        Communicator.ReduceOp.SUM), "a heap send buffer (blocking)");
    refused(() -> comm.allReduce(direct, other, 3, Communicator.Datatype.LONG, Communicator.ReduceOp.SUM),
        "3 longs in 16-byte buffers (blocking)");
  }

  private void refused(Runnable call, String what) {
    try {
      call.run();
      that(false, "iAllReduce", "took " + what + " (IllegalArgumentException expected, before any communication)");
    } catch (IllegalArgumentException expected) {
      // refused on every rank alike
    }
  }

  /**
   * A typed all-reduce and a broadcast pending at once on one communicator, started in the same order on every
   * rank and awaited in the other order, then the other way round: neither takes the other's bytes.
   */
  void aTypedAllReduceOverlapsABroadcast() {
    int count = 3;
    Communicator.Datatype type = Communicator.Datatype.DOUBLE;
    byte[] mine = typedValues(rank, count, type, 1);
    ByteBuffer send = typedBuffer(mine);
    ByteBuffer receive = typedBuffer(new byte[mine.length]);
    Request reduce = comm.iAllReduce(send, receive, count, type, Communicator.ReduceOp.SUM);
    ByteBuffer b = windowed(size - 1, 40);
    Request bcast = comm.iBroadcast(b, size - 1);
    bcast.await();
    reduce.await();
    checkWindow(b, size - 1, 40, "iBroadcast (pending with an iAllReduce)");
    checkTyped(receive, typedExpected(count, type, Communicator.ReduceOp.SUM, 1), "iAllReduce",
        "SUM of 3 DOUBLE pending with an iBroadcast");

    ByteBuffer first = windowed(0, 41);
    Request bcastFirst = comm.iBroadcast(first, 0);
    byte[] longs = typedValues(rank, count, Communicator.Datatype.LONG, 2);
    ByteBuffer in = typedBuffer(longs);
    ByteBuffer out = typedBuffer(new byte[longs.length]);
    Request then = comm.iAllReduce(in, out, count, Communicator.Datatype.LONG, Communicator.ReduceOp.MIN);
    then.await();
    bcastFirst.await();
    checkWindow(first, 0, 41, "iBroadcast (pending with an iAllReduce)");
    checkTyped(out, typedExpected(count, Communicator.Datatype.LONG, Communicator.ReduceOp.MIN, 2), "iAllReduce",
        "MIN of 3 LONG started after an iBroadcast");
  }
}
