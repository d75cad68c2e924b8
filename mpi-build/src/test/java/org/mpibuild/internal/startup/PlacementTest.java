package org.mpibuild.internal.startup;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.mpibuild.BackendUnavailableException;
import org.mpibuild.MpiBuild;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.BackendProvider;
import org.mpibuild.spi.Placement;
import org.mpibuild.spi.SettingSource;
import org.mpibuild.testkit.FakeBackend;
import org.mpibuild.testkit.InProcessCommunicator;

/** A backend learns where its rank runs on its node from the communicator, not from a launcher's variables. */
class PlacementTest {
  static final List<Placement> OPENED = Collections.synchronizedList(new ArrayList<>());

  /** A backend chosen only by name, that records where each rank opened it. */
  public static final class Provider implements BackendProvider {
    @Override
    public String id() {
      return "placement-probe";
    }

    @Override
    public Backend open(SettingSource settings) {
      throw new AssertionError("the core opens backends with their placement");
    }

    @Override
    public Backend open(SettingSource settings, Placement placement) {
      OPENED.add(placement);
      return new FakeBackend();
    }

    @Override
    public Backend openAsDefault(SettingSource settings) {
      throw new BackendUnavailableException("placement-probe is a test backend, chosen only by name", null);
    }

    @Override
    public int priority() {
      return -1000;
    }
  }

  @Test
  void eachRankOpensTheBackendWithItsRankAmongTheRanksOfItsNode() throws Exception {
    OPENED.clear();
    int[] nodeOfRank = {0, 1, 1, 0, 1};
    InProcessCommunicator.World world = new InProcessCommunicator.World(5, 60_000, nodeOfRank);
    ExecutorService ranks = Executors.newFixedThreadPool(5);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int r = 0; r < 5; r++) {
        int rank = r;
        futures.add(ranks.submit(() -> {
          MpiBuild.builder().communicator(world.rank(rank)).set("MPI_BUILD_BACKEND", "placement-probe")
              .set("MPI_BUILD_CACHE", "off").build().close();
          return null;
        }));
      }
      for (Future<?> f : futures) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      ranks.shutdownNow();
    }
    List<String> seen = new ArrayList<>();
    OPENED.forEach(p -> seen.add(p.nodeRank() + "/" + p.nodeSize()));
    Collections.sort(seen);
    assertEquals(List.of("0/2", "0/3", "1/2", "1/3", "2/3"), seen);
  }

  @Test
  void aPlacementOutsideItsNodeIsRefusedWithTheValues() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new Placement(3, 3));
    assertEquals("node rank 3 of 3 ranks on the node", e.getMessage());
  }
}
