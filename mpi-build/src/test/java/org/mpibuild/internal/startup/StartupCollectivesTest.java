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
import org.junit.jupiter.api.Test;
import org.mpibuild.BackendUnavailableException;
import org.mpibuild.internal.agreement.RequestFingerprint;
import org.mpibuild.internal.settings.Settings;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.BackendProvider;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Placement;
import org.mpibuild.spi.SettingSource;
import org.mpibuild.testkit.FakeBackend;
import org.mpibuild.testkit.InProcessCommunicator;

/**
 * What opening costs in collectives: a job whose ranks share one target agrees on the backend and the target in one
 * all-reduce and gathers nothing (the targets of thousands of ranks are not sent to every rank); a job of several
 * targets gathers them; a backend that fails anywhere, or whose target cannot be read, fails every rank, naming the
 * rank. The test kit's record of collective calls counts them (the settings' agreement's all-reduce, of another
 * length, is not opening's).
 */
class StartupCollectivesTest {
  private static final Settings SETTINGS = Settings.from(SettingSource.of(new Properties(),
      Map.of("MPI_BUILD_CACHE", "off")));
  private static final Settings FAILING = Settings.from(SettingSource.of(new Properties(),
      Map.of("MPI_BUILD_CACHE", "off", "MPI_BUILD_BACKEND", "fails-on-rank-2")));

  /** The all-gathers {@code world}'s ranks made. */
  private static long gathers(InProcessCommunicator.World world) {
    return world.calls().stream().filter(c -> c.operation().equals("allGather")).count();
  }

  /** The all-reduces of opening's verdict and targets (a flag and an agreement vector) {@code world}'s ranks made. */
  private static long reduces(InProcessCommunicator.World world) {
    int bytes = (1 + RequestFingerprint.AGREEMENT_INTS) * Integer.BYTES;
    return world.calls().stream().filter(c -> c.operation().equals("allReduceMax") && c.bytes() == bytes).count();
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
   * Opens every rank of {@code world}, rank r's backend a fake one with target {@code targets[r]} (null: one whose
   * target cannot be read); with {@code targets} null, {@link FailsOnRankTwo}'s.
   */
  private static List<Startup> open(InProcessCommunicator.World world, String[] targets) throws Exception {
    int size = world.rank(0).size();
    ExecutorService ranks = Executors.newFixedThreadPool(size);
    try {
      List<Future<Startup>> futures = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        int rank = r;
        futures.add(ranks.submit(() -> {
          Communicator comm = world.rank(rank);
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
    InProcessCommunicator.World world = new InProcessCommunicator.World(5, 60_000);
    List<Startup> opened = open(world, new String[] {"cpu-a", "cpu-a", "cpu-a", "cpu-a", "cpu-a"});
    assertEquals(0, gathers(world), "an all-gather where every rank has the same target");
    assertEquals(5, reduces(world), "one blocking all-reduce per rank: the backend's verdict and the target together");
    for (Startup s : opened) {
      assertEquals(List.of("cpu-a", "cpu-a", "cpu-a", "cpu-a", "cpu-a"), s.targets().rankTargets());
      assertEquals(List.of("cpu-a"), s.targets().distinct());
      assertFalse(s.targets().grouped());
      s.close();
    }
  }

  @Test
  void ranksWithSeveralTargetsGatherThem() throws Exception {
    InProcessCommunicator.World world = new InProcessCommunicator.World(4, 60_000);
    String[] targets = {"cpu-a", "cpu-b", "cpu-a", "cpu-c"};
    List<Startup> opened = open(world, targets);
    assertEquals(4, gathers(world), "one all-gather of the targets per rank");
    assertEquals(4, reduces(world), "one all-reduce per rank");
    for (Startup s : opened) {
      assertEquals(List.of(targets), s.targets().rankTargets());
      assertEquals(List.of("cpu-a", "cpu-b", "cpu-c"), s.targets().distinct());
      assertTrue(s.targets().grouped());
      s.close();
    }
  }

  @Test
  void aBackendThatFailsOnOneRankFailsEveryRankNamingIt() {
    InProcessCommunicator.World world = new InProcessCommunicator.World(4, 60_000);
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> open(world, null));
    assertTrue(e.getCause() instanceof BackendUnavailableException, e.toString());
    assertTrue(e.getCause().getMessage().contains("cannot run on ranks [2]")
        && e.getCause().getMessage().contains("rank 2: no device on this rank"), e.getCause().getMessage());
    assertEquals(4, gathers(world), "one all-gather of the reasons per rank, none of the (different) targets");
    assertEquals(4, reduces(world), "one all-reduce per rank");
  }

  @Test
  void aTargetThatCannotBeReadFailsEveryRankNamingItsRank() {
    InProcessCommunicator.World world = new InProcessCommunicator.World(3, 60_000);
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> open(world, new String[] {"cpu-a", null, "cpu-a"}));
    assertTrue(e.getCause() instanceof BackendUnavailableException, e.toString());
    assertTrue(e.getCause().getMessage().contains("cannot run on ranks [1]")
        && e.getCause().getMessage().contains("rank 1: its target: the device went away"), e.getCause().getMessage());
    assertEquals(3, reduces(world), "every rank in the all-reduce, the failing one too");
  }
}
