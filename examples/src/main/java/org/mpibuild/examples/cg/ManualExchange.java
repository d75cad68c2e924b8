package org.mpibuild.examples.cg;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/**
 * The host-synchronized pattern a program writes without stream-ordered messages: finish the queue, read the
 * data into host memory, call MPI and wait for it ({@code MPI_Isend}/{@code MPI_Irecv} to both neighbours, the
 * {@code Sendrecv} of a halo; {@code MPI_Allreduce}), write the result back, and only then enqueue the next work.
 *
 * @param <B> a device buffer
 */
final class ManualExchange<B> implements Exchange<B> {
  private final Communicator comm;
  private final CgDevice<B> device;
  private final ByteBuffer sendUp;
  private final ByteBuffer sendDown;
  private final ByteBuffer fromUp;
  private final ByteBuffer fromDown;
  private final ByteBuffer mine = direct(Double.BYTES);
  private final ByteBuffer total = direct(Double.BYTES);

  ManualExchange(Communicator comm, CgDevice<B> device, long rowBytes) {
    this.comm = comm;
    this.device = device;
    sendUp = direct(rowBytes);
    sendDown = direct(rowBytes);
    fromUp = direct(rowBytes);
    fromDown = direct(rowBytes);
  }

  @Override
  public void halo(Halo<B> h) {
    device.finish();
    Communicator.Request fromAbove = h.up() >= 0 ? comm.iReceive(fromUp, h.up(), Halo.TAG_DOWN) : null;
    Communicator.Request fromBelow = h.down() >= 0 ? comm.iReceive(fromDown, h.down(), Halo.TAG_UP) : null;
    Communicator.Request toAbove = null;
    Communicator.Request toBelow = null;
    if (h.up() >= 0) {
      device.read(h.firstRow(), 0, sendUp, h.bytes());
      toAbove = comm.iSend(sendUp, h.up(), Halo.TAG_UP);
    }
    if (h.down() >= 0) {
      device.read(h.lastRow(), 0, sendDown, h.bytes());
      toBelow = comm.iSend(sendDown, h.down(), Halo.TAG_DOWN);
    }
    if (fromAbove != null) {
      fromAbove.await();
      device.write(h.above(), fromUp, h.bytes());
    }
    if (fromBelow != null) {
      fromBelow.await();
      device.write(h.below(), fromDown, h.bytes());
    }
    if (toAbove != null) {
      toAbove.await();
    }
    if (toBelow != null) {
      toBelow.await();
    }
  }

  @Override
  public void sum(B scalar) {
    device.read(scalar, 0, mine, Double.BYTES); // blocking: waits for the work that produced it
    comm.allReduce(mine, total, 1, Datatype.DOUBLE, ReduceOp.SUM);
    device.write(scalar, total, Double.BYTES);
  }

  @Override
  public void settle() {
    // every operation finished before its call returned
  }

  @Override
  public void finish() {
    device.finish();
  }

  @Override
  public long helperCpuNanos() {
    return 0;
  }

  @Override
  public void close() {
    // nothing held but host memory
  }

  private static ByteBuffer direct(long bytes) {
    return ByteBuffer.allocateDirect(Math.toIntExact(bytes)).order(ByteOrder.nativeOrder());
  }
}
