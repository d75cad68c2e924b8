package org.mpibuild.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.mpibuild.ffm.MpiC.H;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;
import org.mpibuild.CommunicationException;
import org.mpibuild.spi.Communicator;

/**
 * {@link Communicator} over the MPI C library through FFM, on a duplicate of a communicator with errors
 * returned. Buffers are the direct buffers' own memory: no copies.
 */
final class FfmCommunicator implements Communicator {
  private final MpiC mpi;
  private final long comm;
  private final String name;
  private final int rank;
  private final int size;
  private boolean closed;

  private FfmCommunicator(MpiC mpi, long comm, String name) {
    this.mpi = mpi;
    this.comm = comm;
    this.name = name;
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(JAVA_INT);
      check(mpi.mpi("MPI_Comm_rank", H, mpi.h(comm), ADDRESS, out), "MPI_Comm_rank");
      this.rank = out.get(JAVA_INT, 0);
      check(mpi.mpi("MPI_Comm_size", H, mpi.h(comm), ADDRESS, out), "MPI_Comm_size");
      this.size = out.get(JAVA_INT, 0);
    }
  }

  /** A communicator over a duplicate of {@code parent}, with MPI_ERRORS_RETURN. Collective over it. */
  static FfmCommunicator duplicate(MpiC mpi, long parent, String name) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = mpi.handleSlot(arena);
      checkStatic(mpi, mpi.mpi("MPI_Comm_dup", H, mpi.h(parent), ADDRESS, out), "MPI_Comm_dup of " + name, -1);
      long dup = mpi.read(out);
      checkStatic(mpi, mpi.mpi("MPI_Comm_set_errhandler", H, mpi.h(dup), H, mpi.h(mpi.table.errorsReturn())),
          "MPI_Comm_set_errhandler", -1);
      return new FfmCommunicator(mpi, dup, name);
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

  private static MemorySegment segment(ByteBuffer buffer) {
    if (!buffer.isDirect()) {
      throw new IllegalArgumentException("MPI calls need a direct buffer");
    }
    return MemorySegment.ofBuffer(buffer);
  }

  @Override
  public void broadcast(ByteBuffer buffer, int root) {
    int rc = mpi.bcast(segment(buffer), buffer.remaining(), mpi.table.byteType(), root, comm);
    if (rc != MpiC.SUCCESS) {
      check(rc, "MPI_Bcast of " + buffer.remaining() + " bytes from root " + root);
    }
  }

  @Override
  public Request iBroadcast(ByteBuffer buffer, int root) {
    return start(() -> "MPI_Ibcast", buffer, req -> mpi.ibcast(segment(buffer), buffer.remaining(), mpi.table.byteType(), root, comm, req),
        null);
  }

  @Override
  public int[] allReduceMax(int[] values) {
    int[] out = new int[values.length];
    iAllReduceMax(values, out).await();
    return out;
  }

  @Override
  public Request iAllReduceMax(int[] values, int[] result) {
    // Automatic arenas: closing a shared one costs a handshake with every thread, milliseconds on the
    // path of every collective; these small segments are left to the garbage collector instead.
    Arena arena = Arena.ofAuto();
    MemorySegment in = arena.allocateFrom(JAVA_INT, values);
    MemorySegment out = arena.allocate(JAVA_INT, values.length);
    return start(() -> "MPI_Iallreduce(MAX)", arena, req -> mpi.iallreduce(in, out, values.length, mpi.table.intType(), mpi.table.opMax(), comm, req),
        () -> MemorySegment.copy(out, JAVA_INT, 0, result, 0, result.length));
  }

  @Override
  public Request iAllReduce(ByteBuffer send, ByteBuffer receive, int count, Datatype type, ReduceOp op) {
    Communicator.reductionBytes(send, receive, count, type);
    MemorySegment in = MemorySegment.ofBuffer(send);
    MemorySegment out = MemorySegment.ofBuffer(receive);
    long datatype = mpi.table.datatype(type);
    long operation = mpi.table.op(op);
    // Both buffers stay reachable (their memory is MPI's) until the request completes.
    return start(() -> "MPI_Iallreduce(" + op + ") of " + count + " " + type, List.of(send, receive),
        req -> mpi.iallreduce(in, out, count, datatype, operation, comm, req), null);
  }

  @Override
  public void allReduce(ByteBuffer send, ByteBuffer receive, int count, Datatype type, ReduceOp op) {
    Communicator.reductionBytes(send, receive, count, type);
    int rc = mpi.allreduce(MemorySegment.ofBuffer(send), MemorySegment.ofBuffer(receive), count,
        mpi.table.datatype(type), mpi.table.op(op), comm);
    if (rc != MpiC.SUCCESS) {
      check(rc, "MPI_Allreduce(" + op + ") of " + count + " " + type);
    }
  }

  @Override
  public String persistentCollectives() {
    return mpi.persistent.description();
  }

  @Override
  public PersistentRequest broadcastInit(ByteBuffer buffer, int root) {
    if (!mpi.persistent.available()) {
      return Communicator.super.broadcastInit(buffer, root);
    }
    int bytes = buffer.remaining();
    MemorySegment data = segment(buffer);
    String what = mpi.persistent.bcastInit() + " of " + bytes + " bytes from root " + root;
    return new Persistent(what, buffer, request -> mpi.mpi(mpi.persistent.bcastInit(), ADDRESS, data, JAVA_INT, bytes,
        H, mpi.h(mpi.table.byteType()), JAVA_INT, root, H, mpi.h(comm), H, mpi.h(mpi.table.infoNull()),
        ADDRESS, request));
  }

  @Override
  public PersistentRequest allReduceInit(ByteBuffer send, ByteBuffer receive, int count, Datatype type,
      ReduceOp op) {
    if (!mpi.persistent.available()) {
      return Communicator.super.allReduceInit(send, receive, count, type, op);
    }
    Communicator.reductionBytes(send, receive, count, type);
    MemorySegment in = MemorySegment.ofBuffer(send);
    MemorySegment out = MemorySegment.ofBuffer(receive);
    String what = mpi.persistent.allreduceInit() + "(" + op + ") of " + count + " " + type;
    return new Persistent(what, List.of(send, receive), request -> mpi.mpi(mpi.persistent.allreduceInit(),
        ADDRESS, in, ADDRESS, out, JAVA_INT, count, H, mpi.h(mpi.table.datatype(type)), H, mpi.h(mpi.table.op(op)),
        H, mpi.h(comm), H, mpi.h(mpi.table.infoNull()), ADDRESS, request));
  }

  /**
   * A persistent collective: its request handle lives in a slot of its own from the init to
   * {@code MPI_Request_free}, and its buffers stay reachable as long as it does (MPI keeps their addresses).
   */
  private final class Persistent implements PersistentRequest {
    private final String what;
    @SuppressWarnings("unused")
    private final Object reachable;
    private final Slot slot;
    private Pending current;
    private boolean closed;

    /** Calls the init function ({@code init} fills in the request handle); collective. */
    Persistent(String what, Object keep, Function<MemorySegment, Integer> init) {
      this.what = what;
      this.reachable = keep;
      this.slot = slot();
      int rc = init.apply(slot.request());
      if (rc != MpiC.SUCCESS) {
        release(slot);
        check(rc, what);
      }
    }

    @Override
    public synchronized Request start() {
      if (closed) {
        throw new IllegalStateException(what + ": started after it was closed");
      }
      if (current != null && !current.completed) {
        throw new IllegalStateException(what + ": started again before its previous start completed (test or "
            + "await each start's request first)");
      }
      int rc = mpi.start(slot.request());
      if (rc != MpiC.SUCCESS) {
        check(rc, what + " (MPI_Start)");
      }
      // The slot stays this request's: MPI_Wait leaves a persistent request inactive, not freed.
      current = new Pending(() -> what, this, slot, false, null);
      return current;
    }

    @Override
    public synchronized void close() {
      if (closed) {
        return;
      }
      if (current != null && !current.completed) {
        throw new IllegalStateException(what + ": closed while a start is in progress (await it first)");
      }
      closed = true;
      if (FfmBinding.finalized(mpi)) {
        return;
      }
      int rc = mpi.mpi("MPI_Request_free", ADDRESS, slot.request());
      if (rc != MpiC.SUCCESS) {
        check(rc, what + " (MPI_Request_free)");
      }
      release(slot); // MPI_Request_free wrote MPI_REQUEST_NULL there: nothing refers to it now
    }
  }

  @Override
  public byte[][] allGather(byte[] mine) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment length = arena.allocateFrom(JAVA_INT, mine.length);
      MemorySegment lengths = arena.allocate(JAVA_INT, size);
      check(mpi.mpi("MPI_Allgather", ADDRESS, length, JAVA_INT, 1, H, mpi.h(mpi.table.intType()), ADDRESS, lengths, JAVA_INT, 1,
          H, mpi.h(mpi.table.intType()), H, mpi.h(comm)), "MPI_Allgather of lengths");
      int[] counts = lengths.toArray(JAVA_INT);
      int[] displs = Communicator.displacements(counts);
      long total = (long) displs[size - 1] + counts[size - 1];
      MemorySegment send = arena.allocate(Math.max(1, mine.length));
      MemorySegment.copy(mine, 0, send, JAVA_BYTE, 0, mine.length);
      MemorySegment all = arena.allocate(Math.max(1, total));
      check(mpi.mpi("MPI_Allgatherv", ADDRESS, send, JAVA_INT, mine.length, H, mpi.h(mpi.table.byteType()), ADDRESS, all,
          ADDRESS, arena.allocateFrom(JAVA_INT, counts), ADDRESS, arena.allocateFrom(JAVA_INT, displs),
          H, mpi.h(mpi.table.byteType()), H, mpi.h(comm)), "MPI_Allgatherv of " + mine.length + " bytes");
      byte[][] out = new byte[size][];
      for (int r = 0; r < size; r++) {
        out[r] = all.asSlice(displs[r], counts[r]).toArray(JAVA_BYTE);
      }
      return out;
    }
  }

  @Override
  public Request iSend(ByteBuffer buffer, int dest, int tag) {
    int bytes = buffer.remaining();
    // The message is built only on failure: a ping-pong of small messages must not pay for it every call.
    return start(() -> "MPI_Isend of " + bytes + " bytes to rank " + dest + " (tag " + tag + ")", buffer,
        req -> mpi.isend(segment(buffer), bytes, mpi.table.byteType(), dest, tag, comm, req), null);
  }

  @Override
  public void send(ByteBuffer buffer, int dest, int tag) {
    int rc = mpi.send(segment(buffer), buffer.remaining(), mpi.table.byteType(), dest, tag, comm);
    if (rc != MpiC.SUCCESS) {
      check(rc, "MPI_Send of " + buffer.remaining() + " bytes to rank " + dest + " (tag " + tag + ")");
    }
  }

  @Override
  public void receive(ByteBuffer buffer, int source, int tag) {
    int rc = mpi.recv(segment(buffer), buffer.remaining(), mpi.table.byteType(), source, tag, comm);
    if (rc != MpiC.SUCCESS) {
      check(rc, "MPI_Recv of " + buffer.remaining() + " bytes from rank " + source + " (tag " + tag + ")");
    }
  }

  @Override
  public Request iReceive(ByteBuffer buffer, int source, int tag) {
    int bytes = buffer.remaining();
    return start(() -> "MPI_Irecv of " + bytes + " bytes from rank " + source + " (tag " + tag + ")", buffer,
        req -> mpi.irecv(segment(buffer), bytes, mpi.table.byteType(), source, tag, comm, req), null);
  }

  @Override
  public Communicator split(int color) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = mpi.handleSlot(arena);
      check(mpi.mpi("MPI_Comm_split", H, mpi.h(comm), JAVA_INT, color, JAVA_INT, rank, ADDRESS, out),
          "MPI_Comm_split(color " + color + ")");
      return owned(mpi.read(out), name + " group " + color);
    }
  }

  @Override
  public Communicator splitByNode() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = mpi.handleSlot(arena);
      check(mpi.mpi("MPI_Comm_split_type", H, mpi.h(comm), JAVA_INT, mpi.table.commTypeShared(), JAVA_INT, rank,
          H, mpi.h(mpi.table.infoNull()), ADDRESS, out), "MPI_Comm_split_type(SHARED)");
      return owned(mpi.read(out), name + " node");
    }
  }

  private Communicator owned(long handle, String newName) {
    check(mpi.mpi("MPI_Comm_set_errhandler", H, mpi.h(handle), H, mpi.h(mpi.table.errorsReturn())), "MPI_Comm_set_errhandler");
    return new FfmCommunicator(mpi, handle, newName);
  }

  @Override
  public ThreadLevel threadLevel() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(JAVA_INT);
      check(mpi.mpi("MPI_Query_thread", ADDRESS, out), "MPI_Query_thread");
      return ThreadLevel.values()[mpi.table.ordinalOf(out.get(JAVA_INT, 0))];
    }
  }

  @Override
  public void abort(String message, int errorCode) {
    System.err.println(message);
    System.err.flush();
    mpi.mpi("MPI_Abort", H, mpi.h(mpi.table.commWorld()), JAVA_INT, errorCode);
    Runtime.getRuntime().halt(errorCode);
  }

  @Override
  public String description() {
    return "FFM (" + mpi.kind.name().replace('_', ' ')
        + (mpi.kind == MpiC.Kind.STANDARD_ABI ? " " + mpi.abiVersion + ", " + mpi.implementation() : "") + ") " + name + " (duplicate), " + size + " rank"
        + (size == 1 ? "" : "s");
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (FfmBinding.finalized(mpi)) {
      return;
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment slot = mpi.handleSlot(arena);
      mpi.write(slot, comm);
      check(mpi.mpi("MPI_Comm_free", ADDRESS, slot), "MPI_Comm_free");
    }
  }

  /** Where MPI writes a request's handle, and its completion flag; reused once the request completes. */
  private record Slot(MemorySegment request, MemorySegment flag) {}

  // Slots come from one automatic arena per communicator and return to a small free list: a new arena per
  // request (a Cleaner registration each) cost about a microsecond of every message of a ping-pong.
  private final Arena slots = Arena.ofAuto();
  private final ArrayDeque<Slot> freeSlots = new ArrayDeque<>();

  private Slot slot() {
    synchronized (freeSlots) {
      Slot s = freeSlots.poll();
      if (s != null) {
        return s;
      }
    }
    MemorySegment both = slots.allocate(16, 8);
    return new Slot(both.asSlice(0, mpi.table.handle().byteSize()), both.asSlice(8, JAVA_INT.byteSize()));
  }

  private void release(Slot s) {
    synchronized (freeSlots) {
      if (freeSlots.size() < 64) {
        freeSlots.push(s);
      }
    }
  }

  /** Starts a non-blocking call that fills in a request; {@code keep} stays reachable until it completes. */
  private Request start(Supplier<String> what, Object keep, Function<MemorySegment, Integer> call,
      Runnable onCompletion) {
    Slot slot = slot();
    int started = call.apply(slot.request());
    if (started != MpiC.SUCCESS) {
      release(slot);
      check(started, what.get());
    }
    return new Pending(what, keep, slot, true, onCompletion);
  }

  /**
   * A started request: tested and waited for in its slot. A non-blocking call's slot returns to the free list
   * when it completes; a persistent collective's stays with it until it is freed.
   */
  private final class Pending implements Request {
    private final Supplier<String> what;
    @SuppressWarnings("unused")
    private final Object reachable;
    private final Slot slot;
    private final boolean releaseSlot;
    private final Runnable onCompletion;
    volatile boolean completed;

    Pending(Supplier<String> what, Object keep, Slot slot, boolean releaseSlot, Runnable onCompletion) {
      this.what = what;
      this.reachable = keep;
      this.slot = slot;
      this.releaseSlot = releaseSlot;
      this.onCompletion = onCompletion;
    }

    @Override
    public synchronized boolean test() {
      if (completed) {
        return true;
      }
      int rc = mpi.test(slot.request(), slot.flag());
      if (rc != MpiC.SUCCESS) {
        check(rc, what.get() + " (MPI_Test)");
      }
      if (slot.flag().get(JAVA_INT, 0) != 0) {
        complete();
      }
      return completed;
    }

    @Override
    public synchronized void await() {
      if (!completed) {
        int rc = mpi.waitFor(slot.request());
        if (rc != MpiC.SUCCESS) {
          check(rc, what.get() + " (MPI_Wait)");
        }
        complete();
      }
    }

    private void complete() {
      completed = true;
      if (releaseSlot) {
        release(slot); // MPI keeps no pointer to the slot: the handle it held is done with
      }
      if (onCompletion != null) {
        onCompletion.run();
      }
    }
  }

  private void check(int rc, String what) {
    checkStatic(mpi, rc, what + " of " + name, rank);
  }

  private static void checkStatic(MpiC mpi, int rc, String what, int rank) {
    if (rc != MpiC.SUCCESS) {
      throw new CommunicationException(what + " failed" + (rank >= 0 ? " on rank " + rank : "") + ": "
          + mpi.errorString(rc) + " (MPI error " + rc + ")", null);
    }
  }
}
