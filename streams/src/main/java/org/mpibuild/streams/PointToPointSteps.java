package org.mpibuild.streams;

import org.mpibuild.spi.Communicator;

/**
 * The point-to-point half of the progress thread's work: a send starts once its data is on the host and every
 * send asked for before it has started; a receive is posted once every receive asked for before it has been
 * (whichever way those run), and opens its gate when the message is in. MPI keeps messages between two ranks
 * with one tag in the order they were started, so they match in the order they were asked for.
 */
final class PointToPointSteps {
  private final Communicator comm;
  private final OperationTable table;

  PointToPointSteps(Communicator comm, OperationTable table) {
    this.comm = comm;
    this.table = table;
  }

  /** Moves a send or receive on as far as it can in this pass. */
  void step(StreamOp op, ProgressPass pass) {
    switch (op.state) {
      case WAIT_DEVICE -> {
        // Sends start in order: a send whose data is ready waits for earlier sends to start.
        if (!pass.sendWaiting && pass.beforeFinished(op)) {
          op.request = comm.iSend(op.staging, op.peer, op.tag);
          op.state = StreamOp.State.WAIT_MPI;
          pass.moved = true;
        }
      }
      case WAIT_MPI -> awaitMpi(op, pass);
      case WAIT_WRITE -> pass.awaitWrite(op);
      default -> { }
    }
  }

  /** Posts a receive in its turn; once MPI has completed, opens the gate (a receive) or ends (a send). */
  private void awaitMpi(StreamOp op, ProgressPass pass) {
    if (op.kind == StreamOp.Kind.RECEIVE && op.request == null) {
      if (!pass.receiveUnposted && !table.earlierReceiveUnposted(op)) {
        op.request = comm.iReceive(op.staging, op.peer, op.tag);
        pass.moved = true;
      }
    }
    if (op.request != null && op.request.test()) {
      op.mpiDone = true;
      if (op.gate == null) { // a send; or a receive of the queue's whose command failed
        op.state = StreamOp.State.DONE;
      } else {
        op.gate.open();
        op.state = StreamOp.State.WAIT_WRITE;
      }
      pass.moved = true;
    }
  }
}
