package org.mpibuild.testkit;

import java.nio.ByteBuffer;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Request;

/** The contract's point-to-point messages, where the binding carries them (all ranks agree whether it does). */
final class PointToPointChecks extends ContractCheck {
  PointToPointChecks(Communicator comm) {
    super(comm);
  }

  void pointToPoint() {
    int right = (rank + 1) % size;
    int left = (rank + size - 1) % size;
    ByteBuffer in = ByteBuffer.allocateDirect(24);
    Request received;
    boolean carried;
    try {
      received = comm.iReceive(in.position(2).limit(22), left, 5);
      carried = true;
    } catch (UnsupportedOperationException e) {
      received = null;
      carried = false;
    }
    int[] agree = comm.allReduceMax(new int[] {carried ? 1 : 0, carried ? 0 : 1});
    that(agree[0] + agree[1] == 1, "iReceive", "is carried on some ranks and not on others");
    if (!carried) {
      return;
    }
    ByteBuffer out = ByteBuffer.allocateDirect(24);
    for (int i = 0; i < 24; i++) {
      out.put(i, (byte) (rank * 11 + i));
    }
    Request sent = comm.iSend(out.position(4).limit(24), right, 5);
    sent.await();
    received.await();
    that(in.position() == 2 && in.limit() == 22 && out.position() == 4 && out.limit() == 24, "iSend/iReceive",
        "moved a buffer's position or limit");
    for (int i = 0; i < 20; i++) {
      that(in.get(2 + i) == (byte) (left * 11 + 4 + i), "iReceive", "byte " + i + " from rank " + left + " differs");
    }
    // Two messages with one tag arrive in the order they were sent; the blocking forms too.
    ByteBuffer one = ByteBuffer.allocateDirect(4);
    ByteBuffer two = ByteBuffer.allocateDirect(4);
    Request r1 = comm.iReceive(one, left, 6);
    Request r2 = comm.iReceive(two, left, 6);
    comm.send(ByteBuffer.allocateDirect(4).putInt(0, 1000 + rank), right, 6);
    comm.send(ByteBuffer.allocateDirect(4).putInt(0, 2000 + rank), right, 6);
    r1.await();
    r2.await();
    that(one.getInt(0) == 1000 + left && two.getInt(0) == 2000 + left, "send/iReceive", "messages with one tag "
        + "arrived as " + one.getInt(0) + ", " + two.getInt(0) + ", not in the order they were sent");
    ByteBuffer back = ByteBuffer.allocateDirect(4);
    Request s = comm.iSend(ByteBuffer.allocateDirect(4).putInt(0, 3000 + rank), left, 7);
    comm.receive(back, right, 7);
    s.await();
    that(back.getInt(0) == 3000 + right, "receive", "got " + back.getInt(0) + " from rank " + right);
  }
}
