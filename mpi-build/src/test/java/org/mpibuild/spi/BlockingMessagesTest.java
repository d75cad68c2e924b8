package org.mpibuild.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.mpibuild.internal.comm.LocalCommunicator;

/** Blocking send and receive: by default a non-blocking call and its wait, through any decorator. */
class BlockingMessagesTest {
  /** Records the calls it gets; its requests record their waits. */
  static final class Recording extends ForwardingCommunicator {
    final List<String> calls = new ArrayList<>();

    Recording() {
      super(new LocalCommunicator());
    }

    private Request request(String what) {
      calls.add(what);
      return new Request() {
        @Override
        public boolean test() {
          return true;
        }

        @Override
        public void await() {
          calls.add("await " + what);
        }
      };
    }

    @Override
    public Request iSend(ByteBuffer buffer, int dest, int tag) {
      return request("isend " + buffer.remaining() + " to " + dest + " tag " + tag);
    }

    @Override
    public Request iReceive(ByteBuffer buffer, int source, int tag) {
      return request("irecv " + buffer.remaining() + " from " + source + " tag " + tag);
    }
  }

  @Test
  void byDefaultASendIsAnIsendAndItsWait() {
    Recording comm = new Recording();
    comm.send(ByteBuffer.allocateDirect(8), 1, 7);
    comm.receive(ByteBuffer.allocateDirect(8), 1, 7);
    assertEquals(List.of("isend 8 to 1 tag 7", "await isend 8 to 1 tag 7", "irecv 8 from 1 tag 7",
        "await irecv 8 from 1 tag 7"), comm.calls);
  }

  @Test
  void aDecoratorThatInterceptsIsendSeesBlockingSendsToo() {
    // ForwardingCommunicator leaves send and receive to the defaults, so that they pass through the
    // decorator's own iSend and iReceive (a fault injector, a counter) instead of around them.
    Recording comm = new Recording();
    Communicator outer = new ForwardingCommunicator(comm) {};
    outer.send(ByteBuffer.allocateDirect(1), 1, 0);
    assertEquals(List.of("isend 1 to 1 tag 0", "await isend 1 to 1 tag 0"), comm.calls);
  }

  @Test
  void aBindingWithoutMessagesSaysSo() {
    Communicator local = new LocalCommunicator();
    assertThrows(UnsupportedOperationException.class, () -> local.send(ByteBuffer.allocateDirect(1), 0, 0));
  }
}
