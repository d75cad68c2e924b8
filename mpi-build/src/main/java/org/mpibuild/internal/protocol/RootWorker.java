package org.mpibuild.internal.protocol;

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.mpibuild.KernelSource;
import org.mpibuild.internal.comm.LogContext;
import org.mpibuild.internal.protocol.BinarySource.Obtained;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The requests this rank owns, obtained one at a time on a worker thread in broadcast order, so that at
 * most one compile runs per rank and the next compile overlaps the current broadcast. The worker never
 * outlives the call that made it: closing waits for the compile in progress.
 */
final class RootWorker implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(RootWorker.class);
  private final Duration compileTimeout;
  private final Map<Integer, Future<Obtained>> futures = new HashMap<>();
  private final ExecutorService worker;
  private final Set<Integer> taken = new HashSet<>();
  private volatile boolean abandoned;

  RootWorker(BinarySource source, int logRank, List<String> buildTargets, Duration compileTimeout,
      List<KernelSource> requests, int[] owners, int[] order, int me, boolean load, boolean alone, int sharers) {
    this.compileTimeout = compileTimeout;
    worker = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "mpi-build-obtain");
      t.setDaemon(true);
      return t;
    });
    for (int i : order) {
      if (owners[i] == me) {
        KernelSource request = requests.get(i);
        futures.put(i, worker.submit(() -> {
          if (abandoned) {
            return null;
          }
          try (LogContext ignored = LogContext.rank(logRank)) {
            long t0 = System.nanoTime();
            return source.obtainOnRoot(request, buildTargets, load, alone, sharers).took(System.nanoTime() - t0);
          }
        }));
      }
    }
    worker.shutdown();
  }

  /** Request i's result; waits for it. Never throws for a failed build: that is an error envelope. */
  Obtained get(int i) {
    try {
      Obtained o = futures.get(i).get();
      taken.add(i);
      return o;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for this rank's compile", e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("obtaining a binary failed unexpectedly", e.getCause());
    }
  }

  /**
   * After a failure midway: drops what has not started, waits for the compile in progress (the backend
   * may be closed next), and releases whatever was obtained but never broadcast. A no-op after success.
   */
  @Override
  public void close() {
    // Never interrupt: a compile in progress must end before the backend may close.
    abandoned = true;
    try {
      if (!worker.awaitTermination(compileTimeout.toMillis() + 10_000, TimeUnit.MILLISECONDS)) {
        log.warn("a compile was still running when the build ended");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (Map.Entry<Integer, Future<Obtained>> e : futures.entrySet()) {
      if (taken.contains(e.getKey()) || !e.getValue().isDone()) {
        continue;
      }
      try {
        Obtained o = e.getValue().get();
        if (o == null) {
          continue;
        }
        o.afterBroadcast().run();
        if (o.program() != null) {
          o.program().close();
        }
      } catch (Exception | Error ignored) {
        // failed: nothing to release
      }
    }
  }
}
