package org.mpibuild.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.UseGuard;
import org.mpibuild.testkit.InProcessCommunicator;

/** The messenger's life cycle that both backends share, with a messenger that enqueues nothing. */
class DeviceMessengerTest {
  private final Communicator comm = new InProcessCommunicator.World(2, 20_000).rank(0);

  /** A backend's messenger: counts its device closes, and one call that enqueues nothing. */
  static final class Counting extends DeviceMessenger {
    final AtomicInteger deviceCloses = new AtomicInteger();

    Counting(Communicator comm, UseGuard owner) {
      super(comm, "messenger on queue Q", "Q", Duration.ofSeconds(5), code -> "E" + code, owner);
    }

    static Counting open(Communicator comm, UseGuard owner) {
      return openUnder(owner, () -> new Counting(comm, owner));
    }

    void enqueue() {
      try (UseGuard.Use ignored = use()) {
        messages().checkRoot(comm().size() - 1);
      }
    }

    @Override
    protected void closeDevice() {
      deviceCloses.incrementAndGet();
    }
  }

  @Test
  void closingTwiceClosesTheDeviceOnceAndLaterCallsSayWhy() {
    Counting m = Counting.open(comm, null);
    m.enqueue();
    assertFalse(m.owned());
    assertEquals(0, m.inFlight());
    assertEquals(0, m.persistentCollectivesUsed());
    m.close();
    m.close();
    assertEquals(1, m.deviceCloses.get());
    IllegalStateException e = assertThrows(IllegalStateException.class, m::enqueue);
    assertEquals("messenger on queue Q: it was closed", e.getMessage());
    e = assertThrows(IllegalStateException.class,
        () -> m.messages().send(ByteBuffer.allocateDirect(8), 1, 0, NothingQueued.NOTHING_QUEUED));
    assertEquals("stream-ordered messages on Q: they were closed", e.getMessage(), "the engine stopped too");
  }

  @Test
  void theOwnerClosesTheMessengersItAdoptedWithItsReasonAndForgetsThoseClosedBefore() {
    UseGuard owner = new UseGuard("backend");
    Counting adopted = Counting.open(comm, owner);
    Counting closedFirst = Counting.open(comm, owner);
    assertTrue(adopted.owned());
    closedFirst.close();
    owner.close("its MpiBuild was closed");
    assertEquals(1, adopted.deviceCloses.get());
    assertEquals(1, closedFirst.deviceCloses.get(), "closed once, by itself");
    IllegalStateException e = assertThrows(IllegalStateException.class, adopted::enqueue);
    assertEquals("messenger on queue Q: its MpiBuild was closed", e.getMessage());
    e = assertThrows(IllegalStateException.class, () -> Counting.open(comm, owner));
    assertEquals("backend: its MpiBuild was closed", e.getMessage());
  }

  @Test
  void aMessengerMadeForAnotherOwnerIsClosedAndRefused() {
    UseGuard owner = new UseGuard("backend");
    Counting[] made = new Counting[1];
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> DeviceMessenger.openUnder(owner, () -> made[0] = new Counting(comm, null)));
    assertTrue(e.getMessage().contains("another owner"), e.getMessage());
    assertEquals(1, made[0].deviceCloses.get());
  }

  @Test
  void collectivesAreCheckedBeforeAnythingIsEnqueued() {
    try (Counting m = Counting.open(comm, null)) {
      assertEquals(64, m.broadcastBytes(64, 1));
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> m.broadcastBytes(64, 2));
      assertTrue(e.getMessage().contains("rank 2 is out of range"), e.getMessage());
      e = assertThrows(IllegalArgumentException.class, () -> m.broadcastBytes(Integer.MAX_VALUE - 7, 0));
      assertTrue(e.getMessage().contains("too large for one staging buffer"), e.getMessage());
      assertEquals(32, DeviceMessenger.allReduceBytes(4, Datatype.DOUBLE));
      e = assertThrows(IllegalArgumentException.class, () -> DeviceMessenger.allReduceBytes(0, Datatype.INT));
      assertEquals("count 0 must be 1 or more", e.getMessage());
      e = assertThrows(IllegalArgumentException.class,
          () -> DeviceMessenger.allReduceBytes(Integer.MAX_VALUE, Datatype.LONG));
      assertTrue(e.getMessage().startsWith("message size "), e.getMessage());
    }
  }
}
