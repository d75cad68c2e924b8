package org.mpibuild.testkit;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import org.mpibuild.spi.Communicator;

/**
 * Several ranks in one JVM, one thread each, for unit tests of the protocol. Collectives meet at a
 * barrier with a deadline, so a protocol bug that would hang a real job fails the test instead. Every
 * collective call is recorded, so tests can assert what was (and was not) sent. Point-to-point messages
 * are buffered (a send completes at once). Below {@link ThreadLevel#SERIALIZED}, as under
 * {@code MPI_THREAD_FUNNELED}, a rank's MPI may be called only from the thread that first called it: a
 * call from another thread throws, and is recorded ({@link World#threadViolations()}).
 */
public final class InProcessCommunicator implements Communicator {

  /** A recorded collective call. */
  public record Call(int rank, String operation, int root, int bytes) {}

  /** The state the ranks of one in-process job share. */
  public static final class World {
    private final int size;
    private final CyclicBarrier barrier;
    private final Object[] slots;
    private final long timeoutMillis;
    private final List<Call> calls = Collections.synchronizedList(new ArrayList<>());
    private final int[] nodeOfRank;
    private final Map<String, World> groups = new HashMap<>();
    private World top = this;
    private int[] topRankOf;
    private volatile String abortMessage;
    private volatile ThreadLevel threadLevel = ThreadLevel.MULTIPLE;
    private final ConcurrentHashMap<String, LinkedBlockingQueue<byte[]>>
        mailboxes = new ConcurrentHashMap<>();
    private final List<String> threadViolations = Collections.synchronizedList(new ArrayList<>());

    /** A job of {@code size} ranks on one node whose collectives fail after {@code timeoutMillis}. */
    public World(int size, long timeoutMillis) {
      this(size, timeoutMillis, new int[size]);
    }

    /** A job whose rank r runs on node {@code nodeOfRank[r]}. */
    public World(int size, long timeoutMillis, int[] nodeOfRank) {
      this.size = size;
      this.barrier = new CyclicBarrier(size);
      this.slots = new Object[size];
      this.timeoutMillis = timeoutMillis;
      this.nodeOfRank = nodeOfRank.clone();
      this.topRankOf = IntStream.range(0, size).toArray();
    }

    /** The world of the ranks that passed {@code color} to the split numbered {@code split}. */
    /** The world of a split's group; its calls are also counted, by job rank, in the job's world. */
    private synchronized World group(int split, int color, int[] memberRanks) {
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

    private LinkedBlockingQueue<byte[]> mailbox(int source, int dest, int tag) {
      return mailboxes.computeIfAbsent(source + ">" + dest + "#" + tag,
          k -> new LinkedBlockingQueue<>());
    }

    /** The message of the first abort, or null. */
    public String abortMessage() {
      return abortMessage;
    }

    private Object[] exchange(int rank, Object mine) {
      return exchange(rank, mine, all -> { });
    }

    /**
     * Every rank's contribution; {@code during} runs while every rank is still inside the call, so that a
     * broadcast's receivers copy the root's bytes before the root may touch its buffer again (as in MPI,
     * where a completed broadcast leaves the root free to reuse it).
     */
    private Object[] exchange(int rank, Object mine, Consumer<Object[]> during) {
      slots[rank] = mine;
      await();
      Object[] all = slots.clone();
      during.accept(all);
      await();
      return all;
    }

    private void await() {
      try {
        barrier.await(timeoutMillis, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted in a collective", e);
      } catch (BrokenBarrierException | TimeoutException e) {
        barrier.reset();
        throw new IllegalStateException("collective did not complete within " + timeoutMillis
            + " ms: some rank did not take part (protocol bug)", e);
      }
    }
  }

  private final World world;
  private final int rank;
  private int splits;
  /** The thread that first called this rank's MPI: under FUNNELED, the only one allowed to. */
  private volatile Thread own;
  private ExecutorService progress;

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
   * Non-blocking collectives run on one thread per rank, so that they complete in the order they were
   * started while the caller goes on; blocking ones wait for everything started before them, as in MPI.
   */
  private synchronized ExecutorService progress() {
    if (progress == null) {
      progress = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "in-process rank " + rank + " collectives");
        t.setDaemon(true);
        return t;
      });
    }
    return progress;
  }

  private Request start(Runnable collective) {
    Future<?> f = progress().submit(collective);
    return new Request() {
      @Override
      public boolean test() {
        checkThread("MPI_Test");
        if (!f.isDone()) {
          return false;
        }
        await();
        return true;
      }

      /** Woken when the collective completes: slices of 50 ms cost nothing, and spare a thousand threads. */
      @Override
      public boolean await(long nanos) {
        checkThread("MPI_Test");
        try {
          f.get(Math.max(nanos, 50_000_000), TimeUnit.NANOSECONDS);
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
      public void await() {
        checkThread("MPI_Wait");
        try {
          f.get();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted in a collective", e);
        } catch (ExecutionException e) {
          throw e.getCause() instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
        }
      }
    };
  }

  /** Runs a blocking collective after every non-blocking one this rank started before it. */
  private <T> T ordered(Supplier<T> collective) {
    ExecutorService p;
    synchronized (this) {
      p = progress;
    }
    if (p == null) {
      return collective.get();
    }
    try {
      return p.submit(collective::get).get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted in a collective", e);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
    }
  }

  @Override
  public Request iBroadcast(ByteBuffer buffer, int root) {
    checkThread("MPI_Ibcast");
    return start(() -> doBroadcast(buffer, root));
  }

  @Override
  public Request iAllReduceMax(int[] values, int[] result) {
    checkThread("MPI_Iallreduce");
    int[] mine = values.clone();
    return start(() -> System.arraycopy(doAllReduceMax(mine), 0, result, 0, result.length));
  }

  @Override
  public ThreadLevel threadLevel() {
    return world.threadLevel;
  }

  @Override
  public Communicator split(int color) {
    checkThread("MPI_Comm_split");
    world.record(rank, "split", -1, 0);
    return ownedHere(ordered(() -> splitBy(color)));
  }

  /** A new communicator belongs to the thread that asked for it. */
  private Communicator ownedHere(InProcessCommunicator c) {
    c.own = own;
    return c;
  }

  @Override
  public Request iSend(ByteBuffer buffer, int dest, int tag) {
    checkThread("MPI_Isend");
    byte[] bytes = new byte[buffer.remaining()];
    buffer.duplicate().get(bytes);
    world.mailbox(rank, dest, tag).add(bytes);
    return Request.COMPLETED;
  }

  @Override
  public Request iReceive(ByteBuffer buffer, int source, int tag) {
    checkThread("MPI_Irecv");
    LinkedBlockingQueue<byte[]> box = world.mailbox(source, rank, tag);
    return new Request() {
      private boolean done;

      private boolean take(byte[] m) {
        if (m == null) {
          return false;
        }
        if (m.length != buffer.remaining()) {
          throw new IllegalStateException("MPI_ERR_TRUNCATE: rank " + rank + " posted " + buffer.remaining()
              + " bytes, rank " + source + " sent " + m.length);
        }
        buffer.duplicate().put(m);
        done = true;
        return true;
      }

      @Override
      public synchronized boolean test() {
        checkThread("MPI_Test");
        return done || take(box.poll());
      }

      @Override
      public synchronized boolean await(long nanos) {
        checkThread("MPI_Test");
        try {
          return done || take(box.poll(nanos, TimeUnit.NANOSECONDS));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted in a receive", e);
        }
      }

      @Override
      public synchronized void await() {
        checkThread("MPI_Wait");
        try {
          if (!done) {
            take(box.take());
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted in a receive", e);
        }
      }
    };
  }

  private InProcessCommunicator splitBy(int color) {
    int split = splits++;
    Object[] colors = world.exchange(rank, color);
    List<Integer> members = new ArrayList<>();
    int subRank = 0;
    for (int r = 0; r < colors.length; r++) {
      if ((Integer) colors[r] == color) {
        subRank += r < rank ? 1 : 0;
        members.add(r);
      }
    }
    return world.group(split, color, members.stream().mapToInt(Integer::intValue).toArray()).rank(subRank);
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
  public void broadcast(ByteBuffer buffer, int root) {
    checkThread("MPI_Bcast");
    ordered(() -> {
      doBroadcast(buffer, root);
      return null;
    });
  }

  private void doBroadcast(ByteBuffer buffer, int root) {
    if (!buffer.isDirect()) {
      throw new IllegalArgumentException("broadcast needs a direct buffer");
    }
    if (root < 0 || root >= world.size) {
      // What MPI reports, with errors returned, on every rank: the SPI's exception, as the bindings throw.
      throw new org.mpibuild.CommunicationException("MPI_ERR_ROOT: root " + root + " used in a broadcast of "
          + world.size + " ranks", null);
    }
    world.record(rank, "broadcast", root, buffer.remaining());
    String[] truncated = {null};
    world.exchange(rank, rank == root ? buffer.duplicate() : null, all -> {
      ByteBuffer src = ((ByteBuffer) all[root]).duplicate();
      if (src.remaining() != buffer.remaining()) {
        truncated[0] = "MPI_ERR_TRUNCATE: rank " + rank + " posted " + buffer.remaining() + " bytes, root " + root
            + " sent " + src.remaining();
      } else if (rank != root) {
        buffer.duplicate().put(src);
      }
    });
    if (truncated[0] != null) {
      throw new IllegalStateException(truncated[0]);
    }
  }

  @Override
  public int[] allReduceMax(int[] values) {
    checkThread("MPI_Allreduce");
    return ordered(() -> doAllReduceMax(values));
  }

  private int[] doAllReduceMax(int[] values) {
    world.record(rank, "allReduceMax", -1, values.length * 4);
    return reduce(values, all -> {
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
  public byte[][] allGather(byte[] mine) {
    checkThread("MPI_Allgatherv");
    return ordered(() -> doAllGather(mine));
  }

  private byte[][] doAllGather(byte[] mine) {
    world.record(rank, "allGather", -1, mine.length);
    Object[] all = world.exchange(rank, mine.clone());
    byte[][] out = new byte[all.length][];
    for (int i = 0; i < all.length; i++) {
      out[i] = ((byte[]) all[i]).clone();
    }
    return out;
  }

  @Override
  public Communicator splitByNode() {
    checkThread("MPI_Comm_split_type");
    world.record(rank, "splitByNode", -1, 0);
    return ownedHere(ordered(() -> splitBy(world.nodeOfRank[rank])));
  }

  private int[] reduce(int[] mine, Function<Object[], int[]> op) {
    return op.apply(world.exchange(rank, mine.clone()));
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
