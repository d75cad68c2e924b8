package org.mpibuild.programs;

import static org.jocl.CL.clFinish;
import static org.jocl.CL.clReleaseMemObject;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.jocl.cl_command_queue;
import org.jocl.cl_event;
import org.jocl.cl_mem;
import org.mpibuild.opencl.QueueMessenger;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.Communicator.ReduceOp;

/** The parts of {@link StreamCollectives} where a collective fails, is misused, or a rank stays away. */
final class StreamCollectiveFaults {
  private static final int N = StreamCollectives.N;
  private final StreamCollectives run;

  StreamCollectiveFaults(StreamCollectives run) {
    this.run = run;
  }

  /**
   * The last rank's read fails: its buffer is half the size the collective reads, so the device refuses the
   * read (CL_INVALID_VALUE). (A user event set to an error status ahead of the read would be the natural way,
   * but PoCL 3.1 aborts the process on it.)
   */
  boolean fail(cl_command_queue queue, String part) {
    int failing = run.size - 1;
    cl_mem b = run.buffer(queue, TypedValues.of(Datatype.INT, run.rank == failing ? N / 2 : N, i -> run.rank + 1));
    clFinish(queue);
    String message;
    try (QueueMessenger m = QueueMessenger.open(run.comm, queue)) {
      CompletableFuture<Void> f = part.equals("fail-bcast") ? m.bcastAfter(b, (long) N * 4, failing)
          : m.allreduceAfter(b, N, Datatype.INT, ReduceOp.SUM);
      try {
        f.join();
        message = "no failure";
      } catch (CompletionException e) {
        message = e.getCause().getMessage();
        if (message.contains("has no typed reductions")) {
          throw e;
        }
      }
      clFinish(queue);
    } finally {
      clReleaseMemObject(b);
    }
    boolean same = sameEverywhere(message);
    boolean names = message.contains("rank " + failing + "'s device work before it failed");
    return run.report(part, same && names, (same ? "same on every rank: " : "DIFFERENT on some rank: ") + message);
  }

  /**
   * The last rank all-reduces half the count of the others (issue 44): every rank's future fails with one
   * message naming it and the count, before any data moves (MPI would end the job with MPI_ERR_TRUNCATE).
   */
  boolean mismatch(cl_command_queue queue) {
    int odd = run.size - 1;
    cl_mem b = run.buffer(queue, TypedValues.of(Datatype.INT, N, i -> run.rank + 1));
    clFinish(queue);
    String message;
    try (QueueMessenger m = QueueMessenger.open(run.comm, queue)) {
      try {
        m.allreduceAfter(b, run.rank == odd ? N / 2 : N, Datatype.INT, ReduceOp.SUM).join();
        message = "no failure";
      } catch (CompletionException e) {
        message = e.getCause().getMessage();
      }
      clFinish(queue);
    } finally {
      clReleaseMemObject(b);
    }
    boolean same = sameEverywhere(message);
    boolean names = message.contains("rank " + odd + " differs in count (" + N / 2 + ")");
    return run.report("mismatch", same && names, (same ? "same on every rank: " : "DIFFERENT on some rank: ") + message);
  }

  /** The last rank never enqueues the collective: rank 0 names it at the deadline and aborts the job. */
  boolean absent(cl_command_queue queue) {
    cl_mem b = run.buffer(queue, TypedValues.of(Datatype.INT, N, i -> 1));
    try (QueueMessenger m = QueueMessenger.open(run.comm, queue, Duration.ofSeconds(2))) {
      if (run.rank == run.size - 1) {
        System.out.println("CHECK part=absent rank=" + run.rank + " ok=true detail=staying away");
        System.out.flush();
        try {
          Thread.sleep(60_000); // the job is aborted before this ends
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return false;
      }
      m.bcastAfter(b, (long) N * 4, 0).join();
      return run.report("absent", false, "the broadcast completed without the last rank");
    }
  }

  /**
   * The last rank closes its messenger with a broadcast from it not yet started: its queue is held, so the read of
   * its data has not run (issue 44, item 9). It takes part as closed, so every rank fails at once, well within the
   * deadline, with one message naming it (before, it failed alone, and the others waited until the deadline and
   * aborted the job).
   */
  boolean close(cl_command_queue queue) {
    int closing = run.size - 1;
    cl_mem b = run.buffer(queue, TypedValues.of(Datatype.INT, N, i -> run.rank + 1));
    clFinish(queue);
    String message = "no failure";
    long start = System.nanoTime();
    try {
      QueueMessenger m = QueueMessenger.open(run.comm, queue, Duration.ofSeconds(20));
      cl_event held = run.rank == closing ? run.hold(queue) : null;
      CompletableFuture<Void> f = m.bcastAfter(b, (long) N * 4, closing);
      if (held != null) {
        m.close(); // returns once every rank has failed the broadcast
      }
      try {
        f.join();
      } catch (CompletionException e) {
        message = e.getCause().getMessage();
      }
      if (held != null) {
        StreamCollectives.release(held);
      }
      m.close();
      clFinish(queue);
    } finally {
      clReleaseMemObject(b);
    }
    long millis = (System.nanoTime() - start) / 1_000_000;
    boolean same = sameEverywhere(message);
    boolean names = message.contains("rank " + closing + "'s helper was closed before the collective started");
    return run.report("close", same && names && millis < 10_000, (same ? "same on every rank" : "DIFFERENT on some "
        + "rank") + " after " + millis + " ms: " + message);
  }

  /** Whether every rank has the same {@code message}: gathered on every rank. */
  private boolean sameEverywhere(String message) {
    boolean same = true;
    for (byte[] other : run.comm.allGather(message.getBytes(StandardCharsets.UTF_8))) {
      same &= new String(other, StandardCharsets.UTF_8).equals(message);
    }
    return same;
  }
}
