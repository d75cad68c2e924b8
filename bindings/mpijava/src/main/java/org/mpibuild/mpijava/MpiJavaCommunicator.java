package org.mpibuild.mpijava;

import java.nio.ByteBuffer;
import java.nio.IntBuffer;
import java.util.Arrays;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import org.mpibuild.CommunicationException;
import org.mpibuild.spi.Communicator;

/**
 * {@link Communicator} over Open MPI's Java bindings ({@code mpi.jar}). Works on a duplicate of the
 * caller's communicator, so the library's messages never meet the program's, with errors returned as
 * exceptions instead of aborting the job.
 */
public final class MpiJavaCommunicator implements Communicator {
  private final Intracomm comm;
  private final String name;
  private final int rank;
  private final int size;
  private final Runnable onClose;
  private boolean closed;

  private MpiJavaCommunicator(Intracomm comm, String name, Runnable onClose) throws MPIException {
    this.comm = comm;
    this.name = name;
    this.rank = comm.getRank();
    this.size = comm.getSize();
    this.onClose = onClose;
  }

  /**
   * Duplicates {@code parent} (collective over it) and returns a communicator over the duplicate.
   *
   * @param onClose run after the duplicate is freed, or null
   */
  public static MpiJavaCommunicator duplicate(Intracomm parent, String name, Runnable onClose) {
    try {
      Intracomm dup = parent.dup();
      dup.setErrhandler(MPI.ERRORS_RETURN);
      return new MpiJavaCommunicator(dup, name, onClose);
    } catch (MPIException e) {
      throw new CommunicationException("cannot duplicate " + name + ": " + e.getMessage(), e);
    }
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  public void broadcast(ByteBuffer buffer, int root) {
    if (!buffer.isDirect()) {
      throw new IllegalArgumentException("broadcast needs a direct buffer");
    }
    try {
      // The bindings ignore a buffer's position: hand them a slice that starts at it.
      comm.bcast(buffer.slice(), buffer.remaining(), MPI.BYTE, root);
    } catch (MPIException e) {
      throw fail("MPI_Bcast of " + buffer.remaining() + " bytes from root " + root, e);
    }
  }

  @Override
  public int[] allReduceMax(int[] values) {
    int[] out = new int[values.length];
    try {
      comm.allReduce(values, out, values.length, MPI.INT, MPI.MAX);
    } catch (MPIException e) {
      throw fail("MPI_Allreduce(MAX) of " + values.length + " ints", e);
    }
    return out;
  }

  @Override
  public byte[][] allGather(byte[] mine) {
    try {
      int[] lengths = new int[size];
      comm.allGather(new int[] {mine.length}, 1, MPI.INT, lengths, 1, MPI.INT);
      int[] displacements = Communicator.displacements(lengths);
      byte[] all = new byte[size == 0 ? 0 : displacements[size - 1] + lengths[size - 1]];
      comm.allGatherv(mine, mine.length, MPI.BYTE, all, lengths, displacements, MPI.BYTE);
      byte[][] out = new byte[size][];
      for (int r = 0; r < size; r++) {
        out[r] = Arrays.copyOfRange(all, displacements[r], displacements[r] + lengths[r]);
      }
      return out;
    } catch (MPIException e) {
      throw fail("MPI_Allgatherv of " + mine.length + " bytes", e);
    }
  }

  @Override
  public Request iBroadcast(ByteBuffer buffer, int root) {
    if (!buffer.isDirect()) {
      throw new IllegalArgumentException("broadcast needs a direct buffer");
    }
    try {
      return new Started(comm.iBcast(buffer.slice(), buffer.remaining(), MPI.BYTE, root),
          "MPI_Ibcast of " + buffer.remaining() + " bytes from root " + root, null);
    } catch (MPIException e) {
      throw fail("MPI_Ibcast of " + buffer.remaining() + " bytes from root " + root, e);
    }
  }

  @Override
  public Request iAllReduceMax(int[] values, int[] result) {
    IntBuffer in = MPI.newIntBuffer(values.length).put(values);
    IntBuffer out = MPI.newIntBuffer(values.length);
    String what = "MPI_Iallreduce(MAX) of " + values.length + " ints";
    try {
      return new Started(comm.iAllReduce(in, out, values.length, MPI.INT, MPI.MAX), what,
          () -> out.get(0, result, 0, result.length));
    } catch (MPIException e) {
      throw fail(what, e);
    }
  }

  @Override
  public Request iAllReduce(ByteBuffer send, ByteBuffer receive, int count, Datatype type, ReduceOp op) {
    Communicator.reductionBytes(send, receive, count, type);
    String what = "MPI_Iallreduce(" + op + ") of " + count + " " + type;
    try {
      // The bindings ignore a buffer's position (GetDirectBufferAddress): hand them slices that start at it.
      // The request keeps both slices, and through them the buffers' memory, until it completes.
      return new Started(comm.iAllReduce(send.slice(), receive.slice(), count, datatype(type), op(op)), what, null);
    } catch (MPIException e) {
      throw fail(what, e);
    }
  }

  @Override
  public void allReduce(ByteBuffer send, ByteBuffer receive, int count, Datatype type, ReduceOp op) {
    Communicator.reductionBytes(send, receive, count, type);
    try {
      // slices that start at the buffers' positions, as for iAllReduce
      comm.allReduce(send.slice(), receive.slice(), count, datatype(type), op(op));
    } catch (MPIException e) {
      throw fail("MPI_Allreduce(" + op + ") of " + count + " " + type, e);
    }
  }

  /**
   * mpi.jar's datatype for the SPI's: Open MPI's Java bindings map {@code MPI.INT} to {@code MPI_INT32_T} and
   * {@code MPI.LONG} to {@code MPI_INT64_T} (ompi/mpi/java/c/mpi_Datatype.c, {@code Dts[]}, v4.1.4); mpi.jar
   * has no {@code INT64} of its own, and needs none.
   */
  static mpi.Datatype datatype(Datatype type) {
    return switch (type) {
      case INT -> MPI.INT;
      case LONG -> MPI.LONG;
      case FLOAT -> MPI.FLOAT;
      case DOUBLE -> MPI.DOUBLE;
    };
  }

  static mpi.Op op(ReduceOp op) {
    return switch (op) {
      case SUM -> MPI.SUM;
      case MIN -> MPI.MIN;
      case MAX -> MPI.MAX;
    };
  }

  @Override
  public Request iSend(ByteBuffer buffer, int dest, int tag) {
    String what = "MPI_Isend of " + buffer.remaining() + " bytes to rank " + dest + " (tag " + tag + ")";
    try {
      return new Started(comm.iSend(direct(buffer).slice(), buffer.remaining(), MPI.BYTE, dest, tag), what, null);
    } catch (MPIException e) {
      throw fail(what, e);
    }
  }

  @Override
  public Request iReceive(ByteBuffer buffer, int source, int tag) {
    String what = "MPI_Irecv of " + buffer.remaining() + " bytes from rank " + source + " (tag " + tag + ")";
    try {
      return new Started(comm.iRecv(direct(buffer).slice(), buffer.remaining(), MPI.BYTE, source, tag), what, null);
    } catch (MPIException e) {
      throw fail(what, e);
    }
  }

  private static ByteBuffer direct(ByteBuffer buffer) {
    if (!buffer.isDirect()) {
      throw new IllegalArgumentException("MPI messages need a direct buffer");
    }
    return buffer;
  }

  /** An {@code MPI_Request} with what to do once it completes. */
  private final class Started implements Request {
    private final mpi.Request request;
    private final String what;
    private final Runnable onCompletion;
    private boolean completed;

    Started(mpi.Request request, String what, Runnable onCompletion) {
      this.request = request;
      this.what = what;
      this.onCompletion = onCompletion;
    }

    @Override
    public synchronized boolean test() {
      try {
        if (!completed && request.testStatus() != null) {
          complete();
        }
        return completed;
      } catch (MPIException e) {
        throw fail(what, e);
      }
    }

    @Override
    public synchronized void await() {
      try {
        if (!completed) {
          request.waitFor();
          complete();
        }
      } catch (MPIException e) {
        throw fail(what, e);
      }
    }

    private void complete() {
      completed = true;
      if (onCompletion != null) {
        onCompletion.run();
      }
    }
  }

  /**
   * What {@link #persistentCollectives} says: mpi.jar (Open MPI 4.1 and 5.0) has persistent point-to-point
   * requests ({@code Prequest}) but no persistent collectives, so {@link #broadcastInit} and
   * {@link #allReduceInit} keep the SPI's defaults, which throw.
   */
  static final String PERSISTENT_COLLECTIVES = NO_PERSISTENT_COLLECTIVES + " (mpi.jar has no persistent collectives)";

  @Override
  public String persistentCollectives() {
    return PERSISTENT_COLLECTIVES;
  }

  @Override
  public Communicator split(int color) {
    try {
      Intracomm group = comm.split(color, rank);
      group.setErrhandler(MPI.ERRORS_RETURN);
      return new MpiJavaCommunicator(group, name + " group " + color, null);
    } catch (MPIException e) {
      throw fail("MPI_Comm_split(color " + color + ")", e);
    }
  }

  @Override
  public ThreadLevel threadLevel() {
    try {
      int provided = MPI.queryThread();
      if (provided == MPI.THREAD_MULTIPLE) {
        return ThreadLevel.MULTIPLE;
      } else if (provided == MPI.THREAD_SERIALIZED) {
        return ThreadLevel.SERIALIZED;
      } else if (provided == MPI.THREAD_FUNNELED) {
        return ThreadLevel.FUNNELED;
      }
      return ThreadLevel.SINGLE;
    } catch (MPIException e) {
      throw fail("MPI_Query_thread", e);
    }
  }

  @Override
  public Communicator splitByNode() {
    try {
      Intracomm node = comm.splitType(mpi.Comm.TYPE_SHARED, rank, MPI.INFO_NULL);
      node.setErrhandler(MPI.ERRORS_RETURN);
      return new MpiJavaCommunicator(node, name + " node", null);
    } catch (MPIException e) {
      throw fail("MPI_Comm_split_type(SHARED)", e);
    }
  }

  @Override
  public void abort(String message, int errorCode) {
    System.err.println(message);
    System.err.flush();
    try {
      MPI.COMM_WORLD.abort(errorCode);
    } catch (MPIException e) {
      // Nothing else can end the job from here.
    }
    Runtime.getRuntime().halt(errorCode);
  }

  @Override
  public String description() {
    return "mpi.jar " + name + " (duplicate), " + size + " rank" + (size == 1 ? "" : "s");
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      if (!MPI.isFinalized()) {
        comm.free();
      }
    } catch (MPIException e) {
      throw fail("MPI_Comm_free", e);
    } finally {
      if (onClose != null) {
        onClose.run();
      }
    }
  }

  private CommunicationException fail(String what, MPIException e) {
    return new CommunicationException(what + " failed on rank " + rank + " of " + name + ": " + e.getMessage()
        + " (MPI error class " + e.getErrorClass() + ")", e);
  }
}
