package org.mpibuild.examples.cg;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/**
 * Stream-ordered communication (the device's messenger: {@code QueueMessenger} on OpenCL, {@code StreamMessenger}
 * on CUDA): the halo rows go out with {@code sendAfter} and come in with {@code receiveBefore}, and a sum is an
 * {@code allreduceAfter} of one double, all enqueued on the device's queue behind the work that produces their
 * data and ahead of the work that reads it. The host never waits; it keeps the futures and looks at them only
 * when the solver asks ({@link #settle}, {@link #finish}).
 *
 * @param <B> a device buffer
 */
final class OrderedExchange<B> implements Exchange<B> {
  private final CgDevice.Messenger<B> messenger;
  private final List<CompletableFuture<Void>> pending = new ArrayList<>();
  /** The ids of the threads the messenger started (its progress thread), for their CPU time. */
  private final List<Long> helpers;

  OrderedExchange(Communicator comm, CgDevice<B> device) {
    List<Long> before = streamThreads();
    this.messenger = device.messenger(comm);
    List<Long> after = new ArrayList<>(streamThreads());
    after.removeAll(before);
    this.helpers = after;
  }

  /** @return where the messenger runs its operations ({@link CgDevice.Messenger#operationsRun}) */
  String operationsRun() {
    return messenger.operationsRun();
  }

  @Override
  public void halo(Halo<B> h) {
    // sends first: a receive holds the queue until its message arrives, and the neighbour's queue may be waiting
    // for this rank's row
    if (h.up() >= 0) {
      pending.add(messenger.sendAfter(h.firstRow(), h.bytes(), h.up(), Halo.TAG_UP));
    }
    if (h.down() >= 0) {
      pending.add(messenger.sendAfter(h.lastRow(), h.bytes(), h.down(), Halo.TAG_DOWN));
    }
    if (h.up() >= 0) {
      pending.add(messenger.receiveBefore(h.above(), h.bytes(), h.up(), Halo.TAG_DOWN));
    }
    if (h.down() >= 0) {
      pending.add(messenger.receiveBefore(h.below(), h.bytes(), h.down(), Halo.TAG_UP));
    }
  }

  @Override
  public void sum(B scalar) {
    pending.add(messenger.allreduceAfter(scalar, 1, Datatype.DOUBLE, ReduceOp.SUM));
  }

  @Override
  public void settle() {
    pending.removeIf(f -> f.isDone() && f.join() == null);
  }

  @Override
  public void finish() {
    for (CompletableFuture<Void> f : pending) {
      f.join();
    }
    pending.clear();
  }

  @Override
  public long helperCpuNanos() {
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long sum = 0;
    for (long id : helpers) {
      sum += Math.max(0, threads.getThreadCpuTime(id));
    }
    return sum;
  }

  @Override
  public void close() {
    messenger.close();
  }

  private static List<Long> streamThreads() {
    List<Long> ids = new ArrayList<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith("mpi-build-stream")) {
        ids.add(t.getId());
      }
    }
    return ids;
  }
}
