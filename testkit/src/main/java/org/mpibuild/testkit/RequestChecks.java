package org.mpibuild.testkit;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Request;

/**
 * The contract's non-blocking collectives: a request's {@code test}, {@code await} and {@code await(nanos)},
 * requests matched in the order they were started, and a blocking collective after pending ones.
 */
final class RequestChecks extends ContractCheck {
  RequestChecks(Communicator comm) {
    super(comm);
  }

  void nonBlockingBroadcastsAndAllReduces() {
    ByteBuffer a = windowed(0, 2);
    ByteBuffer c = windowed(size - 1, 3);
    int[] result = new int[reduceInput().length];
    Request ra = comm.iBroadcast(a, 0);
    Request rb = comm.iAllReduceMax(reduceInput(), result);
    Request rc = comm.iBroadcast(c, size - 1);
    that(ra != null && rb != null && rc != null, "iBroadcast/iAllReduceMax", "returned a null request");
    // test() never blocks: poll with await(nanos) until it says complete, within a deadline.
    long deadline = System.nanoTime() + REQUEST_DEADLINE_NANOS;
    while (!rc.test()) {
      rc.await(TimeUnit.MILLISECONDS.toNanos(1));
      that(System.nanoTime() < deadline, "Request.test", "of an iBroadcast still false after "
          + TimeUnit.NANOSECONDS.toSeconds(REQUEST_DEADLINE_NANOS) + " s");
    }
    that(rc.test(), "Request.test", "was false after it had been true");
    rc.await();
    that(rc.await(0), "Request.await(nanos)", "of a completed request returned false");
    ra.await();
    ra.await();
    rb.await();
    checkWindow(a, 0, 2, "iBroadcast");
    checkWindow(c, size - 1, 3, "iBroadcast");
    that(Arrays.equals(result, reduceExpected()), "iAllReduceMax", "wrote " + Arrays.toString(result) + ", not "
        + Arrays.toString(reduceExpected()));
    Request again = comm.iAllReduceMax(new int[] {rank}, result = new int[1]);
    long end = System.nanoTime() + REQUEST_DEADLINE_NANOS;
    while (!again.await(TimeUnit.MILLISECONDS.toNanos(5))) {
      that(System.nanoTime() < end, "Request.await(nanos)", "of an iAllReduceMax still false after "
          + TimeUnit.NANOSECONDS.toSeconds(REQUEST_DEADLINE_NANOS) + " s");
    }
    that(result[0] == size - 1, "iAllReduceMax", "wrote " + result[0] + " once await(nanos) said complete, not "
        + (size - 1));
  }

  /**
   * Requests are matched across ranks in the order they were started, whatever order they are waited for in.
   * MPI does not promise that one completes before a later one does (Open MPI 4.1 completed the fourth of
   * four broadcasts on 3 ranks before the second): each is awaited on its own.
   */
  void requestsAreMatchedInTheOrderTheyWereStarted() {
    ByteBuffer[] buffers = new ByteBuffer[4];
    Request[] requests = new Request[4];
    for (int i = 0; i < 4; i++) {
      buffers[i] = windowed(i % size, 10 + i);
      requests[i] = comm.iBroadcast(buffers[i], i % size);
    }
    for (int i = 3; i >= 0; i--) {
      requests[i].await();
    }
    for (int i = 0; i < 4; i++) {
      that(requests[i].test(), "Request.test", "of iBroadcast " + i + " is false after await returned");
      checkWindow(buffers[i], i % size, 10 + i, "iBroadcast");
    }
  }

  void aBlockingCollectiveAfterPendingOnes() {
    ByteBuffer first = windowed(0, 20);
    Request pending = comm.iBroadcast(first, 0);
    ByteBuffer second = windowed(size - 1, 21);
    comm.broadcast(second, size - 1);
    int[] max = comm.allReduceMax(new int[] {rank});
    pending.await();
    checkWindow(first, 0, 20, "iBroadcast");
    checkWindow(second, size - 1, 21, "broadcast");
    that(max[0] == size - 1, "allReduceMax", "after a pending iBroadcast gave " + max[0]);
  }
}
