package org.mpibuild;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.mpibuild.testkit.FakeBackend;
import org.mpibuild.testkit.InProcessCommunicator;

/** {@link MpiBuild#communicator()}: typed values, and the string it was before as its {@code toString()}. */
class CommunicatorInfoTest {

  /** Logging and concatenation keep printing exactly the binding's description. */
  @Test
  void theStringIsTheDescriptionInConcatenationAndFormatting() {
    CommunicatorInfo info = new CommunicatorInfo("mpi.jar COMM_WORLD (duplicate), 4 ranks", 2, 4, false);
    assertEquals("mpi.jar COMM_WORLD (duplicate), 4 ranks", info.toString());
    assertEquals("on mpi.jar COMM_WORLD (duplicate), 4 ranks", "on " + info);
    assertEquals("binding=mpi.jar COMM_WORLD (duplicate), 4 ranks",
        String.format(Locale.ROOT, "binding=%s", info));
    assertEquals("mpi.jar COMM_WORLD (duplicate), 4 ranks", String.valueOf(info));
  }

  @Test
  void aDescriptionIsRequired() {
    assertThrows(NullPointerException.class, () -> new CommunicatorInfo(null, 0, 1, true));
  }

  /** Local mode: the local communicator's words, rank 0 of 1, local. */
  @Test
  void localModeIsLocalRankZeroOfOne() {
    try (MpiBuild mb = MpiBuild.builder().local().backend(new FakeBackend()).noCache().build()) {
      assertEquals(new CommunicatorInfo("local (no MPI), 1 rank", 0, 1, true), mb.communicator());
    }
  }

  /**
   * A communicator the program passed: its own description, each rank's rank, the size, and not local; the
   * values agree with {@link MpiBuild#rank()} and {@link MpiBuild#size()}.
   */
  @Test
  void aBorrowedCommunicatorGivesEachRankItsRankAndTheSize() throws Exception {
    int size = 3;
    InProcessCommunicator.World world = new InProcessCommunicator.World(size, 60_000);
    ExecutorService ranks = Executors.newFixedThreadPool(size);
    try {
      List<Future<CommunicatorInfo>> futures = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        InProcessCommunicator comm = world.rank(r);
        futures.add(ranks.submit(() -> {
          try (MpiBuild mb = MpiBuild.builder().communicator(comm).backend(new FakeBackend()).noCache().build()) {
            CommunicatorInfo info = mb.communicator();
            assertEquals(mb.rank(), info.rank());
            assertEquals(mb.size(), info.size());
            return info;
          }
        }));
      }
      for (int r = 0; r < size; r++) {
        CommunicatorInfo info = futures.get(r).get(60, TimeUnit.SECONDS);
        assertEquals("in-process, rank " + r + " of " + size, info.toString());
        assertEquals(r, info.rank());
        assertEquals(size, info.size());
        assertFalse(info.local());
      }
    } finally {
      ranks.shutdownNow();
    }
  }
}
