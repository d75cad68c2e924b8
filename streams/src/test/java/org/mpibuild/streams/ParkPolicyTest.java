package org.mpibuild.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The progress thread's waits, with time given: no thread, no sleep. */
class ParkPolicyTest {
  private static final long START = 1_000_000_000L;

  private static ProgressPass pass(boolean any, boolean mpi, boolean collectiveMpi, boolean polledDevice) {
    ProgressPass p = new ProgressPass(false);
    p.any = any;
    p.mpi = mpi;
    p.collectiveMpi = collectiveMpi;
    p.polledDevice = polledDevice;
    return p;
  }

  private static ProgressPass moved() {
    ProgressPass p = pass(true, true, false, false);
    p.moved = true;
    return p;
  }

  @Test
  void progressPassesAgainAtOnceThenSpinsOnMpiBeforeItParks() {
    ParkPolicy parks = new ParkPolicy(START);
    assertEquals(ParkPolicy.AGAIN, parks.next(moved(), START));
    ProgressPass waiting = pass(true, true, false, false);
    assertEquals(ParkPolicy.SPIN, parks.next(waiting, START + ParkPolicy.SPIN_NANOS - 1));
    assertEquals(ParkPolicy.FIRST_PARK_NANOS, parks.next(waiting, START + ParkPolicy.SPIN_NANOS));
  }

  @Test
  void nothingInFlightParksUntilWokenAndDeviceWorkThatWakesParksUpToASweep() {
    ParkPolicy parks = new ParkPolicy(START);
    assertEquals(ParkPolicy.UNTIL_WOKEN, parks.next(pass(false, false, false, false), START));
    long last = 0;
    for (int i = 0; i < 30; i++) {
      last = parks.next(pass(true, false, false, false), START + i);
    }
    assertEquals(ParkPolicy.WOKEN_PARK_NANOS, last, "grows to the sweep, never past it");
  }

  @Test
  void parksGrowFromTheFirstToTheCapOfWhatIsAwaited() {
    ParkPolicy parks = new ParkPolicy(START);
    long park = ParkPolicy.FIRST_PARK_NANOS;
    for (int i = 0; i < 10; i++) {
      long got = parks.next(pass(true, false, false, true), START + ParkPolicy.SPIN_NANOS);
      assertEquals(Math.min(park, ParkPolicy.POLL_PARK_NANOS), got, "park " + i);
      park *= 2;
    }
  }

  @Test
  void messagesIdleLongWithoutACollectiveParkLongerButACollectiveKeepsTheShortParks() {
    long idle = START + ParkPolicy.MPI_IDLE_NANOS + 1;
    ParkPolicy p2p = new ParkPolicy(START);
    ParkPolicy collective = new ParkPolicy(START);
    long pointToPoint = 0;
    long withCollective = 0;
    for (int i = 0; i < 20; i++) {
      pointToPoint = p2p.next(pass(true, true, false, false), idle);
      withCollective = collective.next(pass(true, true, true, false), idle);
    }
    assertEquals(ParkPolicy.POLL_PARK_NANOS, pointToPoint);
    assertEquals(ParkPolicy.MPI_PARK_NANOS, withCollective);
    ParkPolicy recent = new ParkPolicy(START);
    long soon = 0;
    for (int i = 0; i < 20; i++) {
      soon = recent.next(pass(true, true, false, false), START + ParkPolicy.MPI_IDLE_NANOS - 1);
    }
    assertEquals(ParkPolicy.MPI_PARK_NANOS, soon, "not idle long enough yet");
  }

  @Test
  void aDeadlineShortensThePark() {
    ParkPolicy parks = new ParkPolicy(START);
    long now = START + ParkPolicy.SPIN_NANOS;
    ProgressPass p = pass(true, false, false, false);
    for (int i = 0; i < 20; i++) {
      parks.next(p, now); // grown to the sweep
    }
    p.nextDeadline = now + 5_000;
    assertEquals(5_000, parks.next(p, now));
    p.nextDeadline = now - 1;
    assertEquals(1_000, parks.next(p, now), "a passed deadline still parks 1 us, then the pass sees it");
  }

  @Test
  void aSweepIsDueEveryTwentyMilliseconds() {
    ParkPolicy parks = new ParkPolicy(START);
    assertFalse(parks.sweepDue(START + ParkPolicy.WOKEN_PARK_NANOS - 1));
    assertTrue(parks.sweepDue(START + ParkPolicy.WOKEN_PARK_NANOS));
    assertFalse(parks.sweepDue(START + ParkPolicy.WOKEN_PARK_NANOS + 1), "counted from the last sweep");
    assertEquals(20, ParkPolicy.SWEEP_MILLIS);
  }
}
