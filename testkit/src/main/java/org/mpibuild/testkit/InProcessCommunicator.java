package org.mpibuild.testkit;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.mpibuild.spi.Communicator;

/**
 * Several ranks in one JVM, one thread each, for unit tests of the protocol. Collectives meet at a
 * barrier with a deadline, so a protocol bug that would hang a real job fails the test instead. Every
 * collective call is recorded, so tests can assert what was (and was not) sent.
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
    private final java.util.Map<String, World> groups = new java.util.HashMap<>();
    private World top = this;
    private int[] topRankOf;
    private volatile String abortMessage;
    private volatile ThreadLevel threadLevel = ThreadLevel.MULTIPLE;

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
      this.topRankOf = java.util.stream.IntStream.range(0, size).toArray();
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
    private Object[] exchange(int rank, Object mine, java.util.function.Consumer<Object[]> during) {
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
  private java.util.concurrent.ExecutorService progress;

  private InProcessCommunicator(World world, int rank) {
    this.world = world;
    this.rank = rank;
  }

  /**
   * Non-blocking collectives run on one thread per rank, so that they complete in the order they were
   * started while the caller goes on; blocking ones wait for everything started before them, as in MPI.
   */
  private synchronized java.util.concurrent.ExecutorService progress() {
    if (progress == null) {
      progress = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "in-process rank " + rank + " collectives");
        t.setDaemon(true);
        return t;
      });
    }
    return progress;
  }

  private Request start(Runnable collective) {
    java.util.concurrent.Future<?> f = progress().submit(collective);
    return new Request() {
      @Override
      public boolean test() {
        if (!f.isDone()) {
          return false;
        }
        await();
        return true;
      }

      /** Woken when the collective completes: slices of 50 ms cost nothing, and spare a thousand threads. */
      @Override
      public boolean await(long nanos) {
        try {
          f.get(Math.max(nanos, 50_000_000), TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
          return false;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted in a collective", e);
        } catch (java.util.concurrent.ExecutionException e) {
          // reported by await() below
        }
        await();
        return true;
      }

      @Override
      public void await() {
        try {
          f.get();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted in a collective", e);
        } catch (java.util.concurrent.ExecutionException e) {
          throw e.getCause() instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
        }
      }
    };
  }

  /** Runs a blocking collective after every non-blocking one this rank started before it. */
  private <T> T ordered(java.util.function.Supplier<T> collective) {
    java.util.concurrent.ExecutorService p;
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
    } catch (java.util.concurrent.ExecutionException e) {
      throw e.getCause() instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
    }
  }

  @Override
  public Request iBroadcast(ByteBuffer buffer, int root) {
    return start(() -> doBroadcast(buffer, root));
  }

  @Override
  public Request iAllReduceMax(int[] values, int[] result) {
    int[] mine = values.clone();
    return start(() -> System.arraycopy(doAllReduceMax(mine), 0, result, 0, result.length));
  }

  @Override
  public ThreadLevel threadLevel() {
    return world.threadLevel;
  }

  @Override
  public Communicator split(int color) {
    world.record(rank, "split", -1, 0);
    return ordered(() -> splitBy(color));
  }

  private Communicator splitBy(int color) {
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
    world.record(rank, "splitByNode", -1, 0);
    return ordered(() -> splitBy(world.nodeOfRank[rank]));
  }

  private int[] reduce(int[] mine, Function<Object[], int[]> op) {
    return op.apply(world.exchange(rank, mine.clone()));
  }

  @Override
  public void abort(String message, int errorCode) {
    world.abortMessage = message;
    throw new IllegalStateException("aborted with code " + errorCode + ": " + message);
  }

  @Override
  public String description() {
    return "in-process, rank " + rank + " of " + world.size;
  }
}
