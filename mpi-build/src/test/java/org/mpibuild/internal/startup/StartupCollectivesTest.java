package org.mpibuild.internal.startup;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.mpibuild.BackendUnavailableException;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.BackendProvider;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.ForwardingCommunicator;
import org.mpibuild.spi.Placement;
import org.mpibuild.spi.SettingSource;
import org.mpibuild.testkit.FakeBackend;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * What opening costs in collectives: a job whose ranks share one target agrees on the backend and the target in one
 * all-reduce and gathers nothing (the targets of thousands of ranks are not sent to every rank); a job of several
 * targets gathers them; a backend that fails anywhere, or whose target cannot be read, fails every rank, naming the
 * rank. The blocking collectives are counted (the settings' agreement, non-blocking, comes before them).
 */
class StartupCollectivesTest {
  private static final Settings SETTINGS = Settings.from(SettingSource.of(new Properties(),
      Map.of("MPI_BUILD_CACHE", "off")));
  private static final Settings FAILING = Settings.from(SettingSource.of(new Properties(),
      Map.of("MPI_BUILD_CACHE", "off", "MPI_BUILD_BACKEND", "fails-on-rank-2")));

  /** Counts the all-gathers and all-reduces its rank makes. */
  static final class Counting extends ForwardingCommunicator {
    final AtomicInteger gathers;
    final AtomicInteger reduces;

    Counting(Communicator inner, AtomicInteger gathers, AtomicInteger reduces) {
      super(inner);
      this.gathers = gathers;
      this.reduces = reduces;
    }

    @Override
    public byte[][] allGather(byte[] mine) {
      gathers.incrementAndGet();
      return super.allGather(mine);
    }

    @Override
    public int[] allReduceMax(int[] values) {
      reduces.incrementAndGet();
      return super.allReduceMax(values);
    }
  }

  /** A backend chosen only by name, that cannot open on the node's rank 2 (every rank of the test is on one node). */
  public static final class FailsOnRankTwo implements BackendProvider {
    @Override
    public String id() {
      return "fails-on-rank-2";
    }

    @Override
    public Backend open(SettingSource settings) {
      throw new AssertionError("the core opens backends with their placement");
    }

    @Override
    public Backend open(SettingSource settings, Placement placement) {
      if (placement.nodeRank() == 2) {
        throw new BackendUnavailableException("no device on this rank", null);
      }
      FakeBackend b = new FakeBackend();
      b.target = "cpu-" + placement.nodeRank(); // every target differs: the failure still decides alone
      return b;
    }

    @Override
    public Backend openAsDefault(SettingSource settings) {
      throw new BackendUnavailableException("fails-on-rank-2 is a test backend, chosen only by name", null);
    }

    @Override
    public int priority() {
      return -1000;
    }
  }

  /**
   * Opens {@code targets.length} ranks, rank r's backend a fake one with target {@code targets[r]} (null: one whose
   * target cannot be read); with {@code targets} null, {@link FailsOnRankTwo}'s on 4 ranks.
   */
  private static List<Startup> open(String[] targets, AtomicInteger gathers, AtomicInteger reduces) throws Exception {
    int size = targets == null ? 4 : targets.length;
    InProcessCommunicator.World world = new InProcessCommunicator.World(size, 60_000);
    ExecutorService ranks = Executors.newFixedThreadPool(size);
    try {
      List<Future<Startup>> futures = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        int rank = r;
        futures.add(ranks.submit(() -> {
          Communicator comm = new Counting(world.rank(rank), gathers, reduces);
          if (targets == null) {
            return Startup.open(FAILING, comm, null);
          }
          FakeBackend b = targets[rank] != null ? new FakeBackend() : new FakeBackend() {
            @Override
            public String target() {
              throw new IllegalStateException("the device went away");
            }
          };
          b.target = targets[rank];
          return Startup.open(SETTINGS, comm, b);
        }));
      }
      List<Startup> out = new ArrayList<>();
      for (Future<Startup> f : futures) {
        out.add(f.get(60, TimeUnit.SECONDS));
      }
      return out;
    } finally {
      ranks.shutdownNow();
    }
  }

  @Test
  void ranksWithOneTargetAgreeInOneAllReduceAndGatherNothing() throws Exception {
    AtomicInteger gathers = new AtomicInteger();
    AtomicInteger reduces = new AtomicInteger();
    List<Startup> opened = open(new String[] {"cpu-a", "cpu-a", "cpu-a", "cpu-a", "cpu-a"}, gathers, reduces);
    assertEquals(0, gathers.get(), "an all-gather where every rank has the same target");
    assertEquals(5, reduces.get(), "one blocking all-reduce per rank: the backend's verdict and the target together");
    for (Startup s : opened) {
      assertEquals(List.of("cpu-a", "cpu-a", "cpu-a", "cpu-a", "cpu-a"), s.targets().rankTargets());
      assertEquals(List.of("cpu-a"), s.targets().distinct());
      assertFalse(s.targets().grouped());
      s.close();
    }
  }

  @Test
  void ranksWithSeveralTargetsGatherThem() throws Exception {
    AtomicInteger gathers = new AtomicInteger();
    AtomicInteger reduces = new AtomicInteger();
    String[] targets = {"cpu-a", "cpu-b", "cpu-a", "cpu-c"};
    List<Startup> opened = open(targets, gathers, reduces);
    assertEquals(4, gathers.get(), "one all-gather of the targets per rank");
    assertEquals(4, reduces.get(), "one all-reduce per rank");
    for (Startup s : opened) {
      assertEquals(List.of(targets), s.targets().rankTargets());
      assertEquals(List.of("cpu-a", "cpu-b", "cpu-c"), s.targets().distinct());
      assertTrue(s.targets().grouped());
      s.close();
    }
  }

  @Test
  void aBackendThatFailsOnOneRankFailsEveryRankNamingIt() {
    AtomicInteger gathers = new AtomicInteger();
    AtomicInteger reduces = new AtomicInteger();
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> open(null, gathers, reduces));
    assertTrue(e.getCause() instanceof BackendUnavailableException, e.toString());
    assertTrue(e.getCause().getMessage().contains("cannot run on ranks [2]")
        && e.getCause().getMessage().contains("rank 2: no device on this rank"), e.getCause().getMessage());
    assertEquals(4, gathers.get(), "one all-gather of the reasons per rank, none of the (different) targets");
    assertEquals(4, reduces.get(), "one all-reduce per rank");
  }

  @Test
  void aTargetThatCannotBeReadFailsEveryRankNamingItsRank() {
    AtomicInteger gathers = new AtomicInteger();
    AtomicInteger reduces = new AtomicInteger();
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> open(new String[] {"cpu-a", null, "cpu-a"}, gathers, reduces));
    assertTrue(e.getCause() instanceof BackendUnavailableException, e.toString());
    assertTrue(e.getCause().getMessage().contains("cannot run on ranks [1]")
        && e.getCause().getMessage().contains("rank 1: its target: the device went away"), e.getCause().getMessage());
    assertEquals(3, reduces.get(), "every rank in the all-reduce, the failing one too");
  }
}
