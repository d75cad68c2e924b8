package org.mpibuild.testkit;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.mpibuild.spi.Communicator;

/**
 * Several ranks in one JVM, one thread each, for unit tests of the protocol. Collectives are matched by
 * their order on each communicator, as in MPI; the last rank to join one completes it, and a rank waits for
 * it with a deadline, so a protocol bug that would hang a real job fails the test instead. Ranks that call
 * different collectives at the same point fail with both names. No thread runs but the ranks'. Every
 * collective call is recorded, so tests can assert what was (and was not) sent. Point-to-point messages
 * are buffered (a send completes at once). It has no persistent collectives: {@link #persistentCollectives}
 * says none, and {@link #broadcastInit} and {@link #allReduceInit} throw, as the SPI's defaults do. Below {@link ThreadLevel#SERIALIZED}, as under
 * {@code MPI_THREAD_FUNNELED}, a rank's MPI may be called only from the thread that first called it: a
 * call from another thread throws, and is recorded ({@link World#threadViolations()}).
 */
public final class InProcessCommunicator implements Communicator {

  /** A recorded collective call. */
  public record Call(int rank, String operation, int root, int bytes) {}

  /** The state the ranks of one in-process job share. */
  public static final class World {
    private final int size;
    /** The collectives in progress, by their number on this communicator (every rank calls them in order). */
    private final ConcurrentHashMap<Long, Collective> collectives = new ConcurrentHashMap<>();
    private final long timeoutMillis;
    private final List<Call> calls = Collections.synchronizedList(new ArrayList<>());
    private final int[] nodeOfRank;
    private final Map<String, World> groups = new HashMap<>();
    private World top = this;
    private int[] topRankOf;
    private volatile String abortMessage;
    private volatile ThreadLevel threadLevel = ThreadLevel.MULTIPLE;
    private final ConcurrentHashMap<String, Mailbox>
        mailboxes = new ConcurrentHashMap<>();
    private final List<String> threadViolations = Collections.synchronizedList(new ArrayList<>());

    /** A job of {@code size} ranks on one node whose collectives fail after {@code timeoutMillis}. */
    public World(int size, long timeoutMillis) {
      this(size, timeoutMillis, new int[size]);
    }

    /** A job whose rank r runs on node {@code nodeOfRank[r]}. */
    public World(int size, long timeoutMillis, int[] nodeOfRank) {
      this.size = size;
      this.timeoutMillis = timeoutMillis;
      this.nodeOfRank = nodeOfRank.clone();
      this.topRankOf = IntStream.range(0, size).toArray();
    }

    /** The world of the ranks that passed {@code color} to the split numbered {@code split}. */
    /** The world of a split's group; its calls are also counted, by job rank, in the job's world. */
    private synchronized World group(long split, int color, int[] memberRanks) {
      return groups.computeIfAbsent(split + ":" + color, k -> {
        World w = new World(memberRanks.length, timeoutMillis);
        w.threadLevel = threadLevel;
        w.top = top;
        for (int i = 0; i < memberRanks.length; i++) {
          w.topRankOf[i] = topRankOf[memberRanks[i]];
        }
        return w;
      });
    }

    private void record(int rank, String operation, int root, int bytes) {
      calls.add(new Call(rank, operation, root, bytes));
      if (top != this) {
        top.calls.add(new Call(topRankOf[rank], operation + " (split)", root, bytes));
      }
    }

    /** Makes every communicator of this job report {@code level}, as if MPI had provided it. */
    public World threadLevel(ThreadLevel level) {
      this.threadLevel = level;
      return this;
    }

    /** The communicator of one rank. */
    public InProcessCommunicator rank(int rank) {
      return new InProcessCommunicator(this, rank);
    }

    /** Every collective call so far, from every rank. */
    public List<Call> calls() {
      synchronized (calls) {
        return List.copyOf(calls);
      }
    }

    /**
     * The MPI calls made, below {@link ThreadLevel#SERIALIZED}, from a thread other than the rank's own
     * (the one that first called its MPI), in this job and its splits: each names the rank, the call and
     * the two threads.
     */
    public List<String> threadViolations() {
      synchronized (top.threadViolations) {
        return List.copyOf(top.threadViolations);
      }
    }

    private Mailbox mailbox(int source, int dest, int tag) {
      return mailboxes.computeIfAbsent(source + ">" + dest + "#" + tag, k -> new Mailbox());
    }

    /** The message of the first abort, or null. */
    public String abortMessage() {
      return abortMessage;
    }

    /**
     * Joins collective number {@code number} with this rank's contribution. The last rank to join completes
     * it: {@code during} runs for every rank, on that thread, before any rank sees the collective complete, so
     * that a broadcast's receivers copy the root's bytes before the root may touch its buffer again (as in MPI,
     * where a completed broadcast leaves the root free to reuse it). No thread waits for a collective but
     * the ranks that called it, and they are woken only when it completes.
     */
    private Collective join(long number, int rank, String operation, Object mine, Consumer<Object[]> during,
        Function<Object[], Object> combine) {
      Collective c = collectives.computeIfAbsent(number, k -> new Collective(k, size, combine));
      if (c.join(rank, operation, mine, during)) {
        collectives.remove(number);
        c.complete();
      }
      return c;
    }

    /** Waits for {@code c} within the deadline; past it, fails it for every rank that joined or will join. */
    private Object[] await(Collective c) {
      try {
        return c.done.get(timeoutMillis, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted in a collective", e);
      } catch (TimeoutException e) {
        c.done.completeExceptionally(new IllegalStateException("collective did not complete within "
            + timeoutMillis + " ms: some rank did not take part (protocol bug)", e));
        return await(c);
      } catch (ExecutionException e) {
        throw e.getCause() instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
      }
    }
  }

  /** One collective call of every rank of a communicator: their contributions, and its completion. */
  private static final class Collective {
    private final Object[] contributions;
    private final String[] operations;
    @SuppressWarnings("unchecked")
    private final Consumer<Object[]>[] during;
    private int joined;
    private final long number;
    private final Function<Object[], Object> combine;
    /** What {@code combine} made of the contributions, once, when the last rank joined. */
    private Object combined;
    final CompletableFuture<Object[]> done = new CompletableFuture<>();

    @SuppressWarnings("unchecked")
    Collective(long number, int size, Function<Object[], Object> combine) {
      this.number = number;
      this.combine = combine;
      contributions = new Object[size];
      operations = new String[size];
      during = new Consumer[size];
    }

    /** Records one rank's part; true for the last rank, which must then {@link #complete}. */
    synchronized boolean join(int rank, String operation, Object mine, Consumer<Object[]> then) {
      contributions[rank] = mine;
      operations[rank] = operation;
      during[rank] = then;
      return ++joined == contributions.length;
    }

    void complete() {
      for (int r = 0; r < operations.length; r++) {
        if (!operations[r].equals(operations[0])) {
          done.completeExceptionally(new IllegalStateException("mismatched collectives: rank 0 called "
              + operations[0] + ", rank " + r + " called " + operations[r] + " (protocol bug)"));
          return;
        }
      }
      try {
        combined = combine == null ? null : combine.apply(contributions);
        for (Consumer<Object[]> d : during) {
          d.accept(contributions);
        }
        done.complete(contributions);
      } catch (RuntimeException e) {
        done.completeExceptionally(e);
      }
    }
  }

  private final World world;
  private final int rank;
  /** The number of this rank's next collective on this communicator. */
  private long next;
  /** The thread that first called this rank's MPI: under FUNNELED, the only one allowed to. */
  private volatile Thread own;

  private InProcessCommunicator(World world, int rank) {
    this.world = world;
    this.rank = rank;
  }

  /** Below SERIALIZED: fails (and records) a call from a thread other than the rank's own. */
  private void checkThread(String operation) {
    if (world.threadLevel.compareTo(ThreadLevel.SERIALIZED) >= 0) {
      return;
    }
    Thread me = Thread.currentThread();
    if (own == null) {
      synchronized (this) {
        if (own == null) {
          own = me;
        }
      }
    }
    if (own != me) {
      String v = "rank " + rank + ": " + operation + " called from thread '" + me.getName() + "', not from '"
          + own.getName() + "', the only thread allowed to call MPI under MPI_THREAD_" + world.threadLevel;
      world.top.threadViolations.add(v);
      throw new IllegalStateException(v);
    }
  }

  /**
   * Joins this rank's next collective on this communicator, as MPI matches collectives: by their order.
   * It completes when the last rank joins. A blocking broadcast or typed all-reduce where another rank made the
   * non-blocking one (their names differ) fails it for every rank as mismatched, as MPI does not match them (MPI
   * 4.0, section 6.12); {@code allReduceMax} and {@code iAllReduceMax} still match each other.
   */
  private Collective join(String operation, Object mine, Consumer<Object[]> during,
      Function<Object[], Object> combine) {
    long number;
    synchronized (this) {
      number = next++;
    }
    return world.join(number, rank, operation, mine, during == null ? all -> { } : during, combine);
  }

  /** A request for a collective joined without waiting. */
  private Request request(Collective c, Consumer<Object[]> then) {
    return new Request() {
      private boolean finished;

      @Override
      public boolean test() {
        checkThread("MPI_Test");
        if (!c.done.isDone()) {
          String aborted = world.abortMessage;
          if (aborted != null) { // MPI_Abort ends every rank of the job, those waiting in collectives included
            throw new IllegalStateException("the job was aborted by another rank: " + aborted);
          }
          return false;
        }
        await();
        return true;
      }

      /** Woken when the collective completes: slices of 50 ms cost nothing. */
      @Override
      public boolean await(long nanos) {
        checkThread("MPI_Test");
        try {
          c.done.get(Math.max(nanos, 50_000_000), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
          return false;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted in a collective", e);
        } catch (ExecutionException e) {
          // reported by await() below
        }
        await();
        return true;
      }

      @Override
      public synchronized void await() {
        checkThread("MPI_Wait");
        Object[] all = world.await(c);
        if (!finished) {
          finished = true;
          then.accept(all);
        }
      }
    };
  }

  @Override
  public Request iBroadcast(ByteBuffer buffer, int root) {
    checkThread("MPI_Ibcast");
    String[] truncated = {null};
    return request(joinBroadcast("broadcast", buffer, root, truncated), all -> failIfTruncated(truncated));
  }

  @Override
  public void broadcast(ByteBuffer buffer, int root) {
    checkThread("MPI_Bcast");
    String[] truncated = {null};
    world.await(joinBroadcast("blocking broadcast", buffer, root, truncated));
    failIfTruncated(truncated);
  }

  /** Joins a broadcast whose receivers copy the root's bytes as it completes; a size mismatch lands in truncated. */
  private Collective joinBroadcast(String operation, ByteBuffer buffer, int root, String[] truncated) {
    if (!buffer.isDirect()) {
      throw new IllegalArgumentException("broadcast needs a direct buffer");
    }
    if (root < 0 || root >= world.size) {
      // What MPI reports, with errors returned, on every rank: the SPI's exception, as the bindings throw.
      throw new org.mpibuild.CommunicationException("MPI_ERR_ROOT: root " + root + " used in a broadcast of "
          + world.size + " ranks", null);
    }
    world.record(rank, "broadcast", root, buffer.remaining()); // recorded alike: tests count broadcasts of both kinds
    return join(operation, rank == root ? buffer.duplicate() : null, all -> {
      ByteBuffer src = ((ByteBuffer) all[root]).duplicate();
      if (src.remaining() != buffer.remaining()) {
        truncated[0] = "MPI_ERR_TRUNCATE: rank " + rank + " posted " + buffer.remaining() + " bytes, root " + root
            + " sent " + src.remaining();
      } else if (rank != root) {
        buffer.duplicate().put(src);
      }
    }, null);
  }

  private static void failIfTruncated(String[] truncated) {
    if (truncated[0] != null) {
      throw new IllegalStateException(truncated[0]);
    }
  }

  @Override
  public Request iAllReduceMax(int[] values, int[] result) {
    checkThread("MPI_Iallreduce");
    Collective c = joinAllReduceMax(values);
    return request(c, all -> System.arraycopy((int[]) c.combined, 0, result, 0, result.length));
  }

  @Override
  public int[] allReduceMax(int[] values) {
    checkThread("MPI_Allreduce");
    Collective c = joinAllReduceMax(values);
    world.await(c);
    return ((int[]) c.combined).clone();
  }

  /** Joins an all-reduce whose maximum is computed once, by the last rank to join. */
  private Collective joinAllReduceMax(int[] values) {
    world.record(rank, "allReduceMax", -1, values.length * 4);
    // blocking and not joined alike: the kit's contract test pins it (the FFM binding's allReduceMax is
    // MPI_Iallreduce and a wait); the typed all-reduce and the broadcast are joined apart
    return join("allReduceMax", values.clone(), null, all -> {
      int[] out = ((int[]) all[0]).clone();
      for (Object o : all) {
        int[] v = (int[]) o;
        for (int i = 0; i < out.length; i++) {
          out[i] = Math.max(out[i], v[i]);
        }
      }
      return out;
    });
  }

  @Override
  public Request iAllReduce(ByteBuffer send, ByteBuffer receive, int count, Datatype type, ReduceOp op) {
    checkThread("MPI_Iallreduce");
    Collective c = joinAllReduce("allReduce(" + type + ", " + op + ")", send, count, type, op, receive);
    return request(c, all -> receive.duplicate().put((byte[]) c.combined));
  }

  /** Blocking: matches only the blocking all-reduce on the other ranks (a mix fails as mismatched), as in MPI. */
  @Override
  public void allReduce(ByteBuffer send, ByteBuffer receive, int count, Datatype type, ReduceOp op) {
    checkThread("MPI_Allreduce");
    Collective c = joinAllReduce("blocking allReduce(" + type + ", " + op + ")", send, count, type, op, receive);
    world.await(c);
    receive.duplicate().put((byte[]) c.combined);
  }

  private Collective joinAllReduce(String operation, ByteBuffer send, int count, Datatype type, ReduceOp op,
      ByteBuffer receive) {
    int bytes = Communicator.reductionBytes(send, receive, count, type);
    // recorded alike (tests count all-reduces of both kinds), joined apart (MPI does not match them)
    world.record(rank, "allReduce(" + type + ", " + op + ")", -1, bytes);
    byte[] mine = new byte[bytes];
    send.duplicate().get(mine);
    return join(operation, mine, null, all -> Reductions.reduce(all, count, type, op));
  }

  @Override
  public byte[][] allGather(byte[] mine) {
    checkThread("MPI_Allgatherv");
    world.record(rank, "allGather", -1, mine.length);
    Object[] all = world.await(join("allGather", mine.clone(), null, null));
    byte[][] out = new byte[all.length][];
    for (int i = 0; i < all.length; i++) {
      out[i] = ((byte[]) all[i]).clone();
    }
    return out;
  }

  @Override
  public ThreadLevel threadLevel() {
    return world.threadLevel;
  }

  @Override
  public Communicator split(int color) {
    checkThread("MPI_Comm_split");
    world.record(rank, "split", -1, 0);
    return splitBy("split", color);
  }

  @Override
  public Communicator splitByNode() {
    checkThread("MPI_Comm_split_type");
    world.record(rank, "splitByNode", -1, 0);
    return splitBy("splitByNode", world.nodeOfRank[rank]);
  }

  /** The communicator of the ranks that pass the same color; it belongs to the thread that asked for it. */
  private InProcessCommunicator splitBy(String operation, int color) {
    Collective c = join(operation, color, null, null);
    Object[] colors = world.await(c);
    List<Integer> members = new ArrayList<>();
    int subRank = 0;
    for (int r = 0; r < colors.length; r++) {
      if ((Integer) colors[r] == color) {
        subRank += r < rank ? 1 : 0;
        members.add(r);
      }
    }
    InProcessCommunicator mine =
        world.group(c.number, color, members.stream().mapToInt(Integer::intValue).toArray()).rank(subRank);
    mine.own = own;
    return mine;
  }

  @Override
  public Request iSend(ByteBuffer buffer, int dest, int tag) {
    checkThread("MPI_Isend");
    byte[] bytes = new byte[buffer.remaining()];
    buffer.duplicate().get(bytes);
    Mailbox box = world.mailbox(rank, dest, tag);
    synchronized (box) {
      box.messages.add(bytes);
      box.notifyAll();
    }
    return Request.COMPLETED;
  }

  /**
   * The messages from one rank to another with one tag, and the receives posted for them: as in MPI, messages
   * match receives in the order the receives were posted, not the order they are tested in.
   */
  static final class Mailbox {
    final java.util.ArrayDeque<byte[]> messages = new java.util.ArrayDeque<>();
    final java.util.ArrayDeque<Posted> posted = new java.util.ArrayDeque<>();

    /** Gives waiting messages to the earliest posted receives. Holds this object's lock. */
    void deliver() {
      while (!posted.isEmpty() && !messages.isEmpty()) {
        posted.poll().take(messages.poll());
      }
    }
  }

  /** A posted receive. */
  private static final class Posted {
    final ByteBuffer buffer;
    final int rank;
    final int source;
    boolean done;
    RuntimeException error;

    Posted(ByteBuffer buffer, int rank, int source) {
      this.buffer = buffer;
      this.rank = rank;
      this.source = source;
    }

    void take(byte[] m) {
      if (m.length != buffer.remaining()) {
        error = new IllegalStateException("MPI_ERR_TRUNCATE: rank " + rank + " posted " + buffer.remaining()
            + " bytes, rank " + source + " sent " + m.length);
      } else {
        buffer.duplicate().put(m);
      }
      done = true;
    }
  }

  @Override
  public Request iReceive(ByteBuffer buffer, int source, int tag) {
    checkThread("MPI_Irecv");
    Mailbox box = world.mailbox(source, rank, tag);
    Posted posted = new Posted(buffer, rank, source);
    synchronized (box) {
      box.posted.add(posted);
      box.deliver();
    }
    return new Request() {
      private boolean finish() {
        if (posted.error != null) {
          throw posted.error;
        }
        return posted.done;
      }

      @Override
      public boolean test() {
        checkThread("MPI_Test");
        synchronized (box) {
          box.deliver();
          return finish();
        }
      }

      @Override
      public boolean await(long nanos) {
        checkThread("MPI_Test");
        long until = System.nanoTime() + nanos;
        synchronized (box) {
          try {
            box.deliver();
            while (!posted.done) {
              long left = until - System.nanoTime();
              if (left <= 0) {
                return false;
              }
              TimeUnit.NANOSECONDS.timedWait(box, left);
              box.deliver();
            }
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted in a receive", e);
          }
          return finish();
        }
      }

      @Override
      public void await() {
        checkThread("MPI_Wait");
        synchronized (box) {
          try {
            box.deliver();
            while (!posted.done) {
              box.wait();
              box.deliver();
            }
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted in a receive", e);
          }
          finish();
        }
      }
    };
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return world.size;
  }

  @Override
  public void abort(String message, int errorCode) {
    checkThread("MPI_Abort");
    world.abortMessage = message;
    throw new IllegalStateException("aborted with code " + errorCode + ": " + message);
  }

  @Override
  public String description() {
    return "in-process, rank " + rank + " of " + world.size;
  }
}
