package org.mpibuild.testkit;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Request;

/**
 * The contract's persistent collectives, where the binding has them; else that both {@code *Init} methods
 * refuse, and a printed {@link CommunicatorContract#skippedLine}.
 */
final class PersistentCollectiveChecks extends ContractCheck {
  PersistentCollectiveChecks(Communicator comm) {
    super(comm);
  }

  /**
   * Where the binding offers persistent collectives (all ranks must agree on what {@link
   * Communicator#persistentCollectives} says): one all-reduce prepared once and started three times with new
   * values, a second start while one is in progress refused, a broadcast from the last rank started twice with
   * new bytes, and closing. Where it offers none, both {@code *Init} methods throw {@link
   * UnsupportedOperationException} and rank 0 prints what was skipped.
   */
  void persistentCollectives() {
    String what = comm.persistentCollectives();
    that(what != null && !what.isBlank(), "persistentCollectives", "is empty");
    byte[][] all = comm.allGather(what.getBytes(StandardCharsets.UTF_8));
    for (int r = 0; r < size; r++) {
      String theirs = new String(all[r], StandardCharsets.UTF_8);
      that(theirs.equals(what), "persistentCollectives", "rank " + r + " says '" + theirs + "', this rank '" + what
          + "'");
    }
    if (what.startsWith("none")) {
      unsupported(() -> comm.broadcastInit(ByteBuffer.allocateDirect(8), 0), "broadcastInit", what);
      unsupported(() -> comm.allReduceInit(ByteBuffer.allocateDirect(8), ByteBuffer.allocateDirect(8), 1,
          Communicator.Datatype.LONG, Communicator.ReduceOp.SUM), "allReduceInit", what);
      if (rank == 0) {
        System.out.println(CommunicatorContract.skippedLine("persistent collectives (broadcastInit, allReduceInit)", what + "; "
            + comm.description()));
        System.out.flush();
      }
      return;
    }
    persistentAllReduce();
    persistentBroadcast();
  }

  private void unsupported(Runnable call, String method, String what) {
    try {
      call.run();
      that(false, method, "returned though persistentCollectives() says '" + what + "'");
    } catch (UnsupportedOperationException expected) {
      // as the SPI's default
    }
  }

  private void persistentAllReduce() {
    int count = 4;
    Communicator.Datatype type = Communicator.Datatype.LONG;
    Communicator.ReduceOp op = Communicator.ReduceOp.SUM;
    ByteBuffer send = typedBuffer(new byte[count * type.bytes()]);
    ByteBuffer receive = typedBuffer(new byte[count * type.bytes()]);
    try (Communicator.PersistentRequest p = comm.allReduceInit(send, receive, count, type, op)) {
      that(p != null, "allReduceInit", "returned null");
      for (int round = 0; round < 3; round++) {
        byte[] mine = typedValues(rank, count, type, 10 + round);
        send.put(AT, mine);
        Request r = p.start();
        that(r != null, "PersistentRequest.start", "returned null");
        if (round == 1) {
          try {
            p.start();
            that(false, "PersistentRequest.start", "started again while its previous start was in progress");
          } catch (IllegalStateException expected) {
            // one start at a time
          }
        }
        long deadline = System.nanoTime() + REQUEST_DEADLINE_NANOS;
        while (!r.await(TimeUnit.MILLISECONDS.toNanos(1))) {
          that(System.nanoTime() < deadline, "PersistentRequest.start", "round " + round + " still incomplete after "
              + TimeUnit.NANOSECONDS.toSeconds(REQUEST_DEADLINE_NANOS) + " s");
        }
        checkTyped(receive, typedExpected(count, type, op, 10 + round), "allReduceInit",
            op + " of " + count + " " + type + ", start " + (round + 1) + " of 3");
        checkTyped(send, mine, "allReduceInit", "start " + (round + 1) + " (the send buffer)");
      }
    }
  }

  private void persistentBroadcast() {
    int root = size - 1; // not rank 0 wherever there are 2 ranks or more
    ByteBuffer b = windowed(root, 50);
    try (Communicator.PersistentRequest p = comm.broadcastInit(b, root)) {
      for (int round = 0; round < 2; round++) {
        int salt = 50 + round;
        ByteBuffer whole = b.duplicate().clear(); // new bytes in the same buffer, whose window stays 5..45
        for (int i = 0; i < 64; i++) {
          whole.put(i, (byte) (rank == root && i >= 5 && i < 45 ? payload(root, salt, i) : 0x70 + rank));
        }
        Request r = p.start();
        r.await();
        that(r.test(), "PersistentRequest.start", "test() of a broadcast that await() completed is false");
        checkWindow(b, root, salt, "broadcastInit (start " + (round + 1) + ")");
      }
      p.close();
      p.close(); // twice: nothing
      try {
        p.start();
        that(false, "PersistentRequest.start", "started after close()");
      } catch (IllegalStateException expected) {
        // closed
      }
    }
    int[] max = comm.allReduceMax(new int[] {rank});
    that(max[0] == size - 1, "allReduceMax", "after persistent collectives gave " + max[0]);
  }
}
