package org.mpibuild.examples.cg;

import static org.jocl.CL.CL_TRUE;
import static org.jocl.CL.clEnqueueReadBuffer;
import static org.jocl.CL.clEnqueueWriteBuffer;
import static org.jocl.CL.clFinish;
import static org.mpibuild.examples.cg.OpenClCg.check;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.jocl.Pointer;
import org.jocl.cl_command_queue;
import org.jocl.cl_mem;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/**
 * The host-synchronized pattern a program writes without stream-ordered messages: finish the queue, read the
 * data into host memory, call MPI and wait for it ({@code MPI_Isend}/{@code MPI_Irecv} to both neighbours, the
 * {@code Sendrecv} of a halo; {@code MPI_Allreduce}), write the result back, and only then enqueue the next work.
 */
final class ManualExchange implements Exchange {
  private final Communicator comm;
  private final cl_command_queue queue;
  private final ByteBuffer sendUp;
  private final ByteBuffer sendDown;
  private final ByteBuffer fromUp;
  private final ByteBuffer fromDown;
  private final ByteBuffer mine = direct(Double.BYTES);
  private final ByteBuffer total = direct(Double.BYTES);

  ManualExchange(Communicator comm, cl_command_queue queue, long rowBytes) {
    this.comm = comm;
    this.queue = queue;
    sendUp = direct(rowBytes);
    sendDown = direct(rowBytes);
    fromUp = direct(rowBytes);
    fromDown = direct(rowBytes);
  }

  @Override
  public void halo(Halo h) {
    check(clFinish(queue));
    Communicator.Request fromAbove = h.up() >= 0 ? comm.iReceive(fromUp, h.up(), Halo.TAG_DOWN) : null;
    Communicator.Request fromBelow = h.down() >= 0 ? comm.iReceive(fromDown, h.down(), Halo.TAG_UP) : null;
    Communicator.Request toAbove = null;
    Communicator.Request toBelow = null;
    if (h.up() >= 0) {
      read(h.firstRow(), sendUp, h.bytes());
      toAbove = comm.iSend(sendUp, h.up(), Halo.TAG_UP);
    }
    if (h.down() >= 0) {
      read(h.lastRow(), sendDown, h.bytes());
      toBelow = comm.iSend(sendDown, h.down(), Halo.TAG_DOWN);
    }
    if (fromAbove != null) {
      fromAbove.await();
      write(h.above(), fromUp, h.bytes());
    }
    if (fromBelow != null) {
      fromBelow.await();
      write(h.below(), fromDown, h.bytes());
    }
    if (toAbove != null) {
      toAbove.await();
    }
    if (toBelow != null) {
      toBelow.await();
    }
  }

  @Override
  public void sum(cl_mem scalar) {
    read(scalar, mine, Double.BYTES); // blocking: waits for the work that produced it
    comm.allReduce(mine, total, 1, Datatype.DOUBLE, ReduceOp.SUM);
    write(scalar, total, Double.BYTES);
  }

  private void read(cl_mem from, ByteBuffer to, long bytes) {
    check(clEnqueueReadBuffer(queue, from, CL_TRUE, 0, bytes, Pointer.to(to), 0, null, null));
  }

  private void write(cl_mem to, ByteBuffer from, long bytes) {
    check(clEnqueueWriteBuffer(queue, to, CL_TRUE, 0, bytes, Pointer.to(from), 0, null, null));
  }

  @Override
  public void settle() {
    // every operation finished before its call returned
  }

  @Override
  public void finish() {
    check(clFinish(queue));
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
