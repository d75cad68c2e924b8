package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.testcontainers.containers.BindMode;
import org.testcontainers.containers.Container;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.Network;
import org.testcontainers.containers.startupcheck.OneShotStartupCheckStrategy;
import org.testcontainers.utility.DockerImageName;

/**
 * Several nodes for real, as containers of the runtime image (docker/Dockerfile, staged from this build by
 * scripts/image-context) on an internal network that the test creates: no published port, nothing reached
 * but the other containers. mpirun starts ranks over ssh with a hostfile, 2 per node. The engine is the one
 * DOCKER_HOST names (scripts/container-engine sets up Podman's Docker API on machines without Docker);
 * without one every test is skipped, printing why, and counted as skipped.
 */
class DockerIT {
  static final String IMAGE = RuntimeImage.IMAGE;
  static final String SUMMARY_PREFIX = "summary: ranks=";
  private static String noEngine;

  @BeforeAll
  static void buildImage() throws Exception {
    noEngine = RuntimeImage.ensure();
  }

  /** Each test is skipped, and counted as skipped, without an engine. */
  @BeforeEach
  void needsAnEngine(org.junit.jupiter.api.TestInfo test) {
    if (noEngine != null) {
      System.out.println("DockerIT: " + test.getDisplayName() + " skipped: " + noEngine);
      Assumptions.abort(noEngine);
    }
  }

  /** A cluster of nodes node1..nodeN on a fresh internal network, each running sshd. */
  static final class Cluster implements AutoCloseable {
    final Network network = Network.builder().createNetworkCmdModifier(cmd -> cmd.withInternal(true)).build();
    final List<GenericContainer<?>> nodes = new ArrayList<>();
    final String prefix;

    Cluster(int size, Path shared) {
      this(size, shared, "node");
    }

    /** A cluster whose nodes are named PREFIX1..PREFIXN, so that two clusters never share a host name. */
    Cluster(int size, Path shared, String prefix) {
      this.prefix = prefix;
      Map<String, String> hosts = new LinkedHashMap<>();
      for (int n = size; n >= 1; n--) { // workers first; the first node, which launches mpirun, knows them all
        String name = prefix + n;
        GenericContainer<?> c = new GenericContainer<>(DockerImageName.parse(IMAGE)).withNetwork(network)
            .withCreateContainerCmdModifier(cmd -> cmd.withHostName(name))
            .withCommand("/usr/sbin/sshd", "-D", "-e", "-f", "/etc/mpi-build/sshd_config");
        if (shared != null) {
          c.withFileSystemBind(shared.toString(), "/shared", BindMode.READ_WRITE);
        }
        hosts.forEach(c::withExtraHost);
        c.start();
        nodes.add(0, c);
        hosts.put(name, c.getContainerInfo().getNetworkSettings().getNetworks().values().iterator().next()
            .getIpAddress());
      }
    }

    /** Runs {@code script} in node1's shell; returns its output, failing on a non-zero exit. */
    String onNode1(String script) throws Exception {
      Container.ExecResult r = nodes.get(0).execInContainer("bash", "-c", script);
      String out = r.getStdout() + r.getStderr();
      assertEquals(0, r.getExitCode(), out);
      return out;
    }

    /** Runs the demo over every node, 2 ranks per node, with the extra environment forwarded to every rank. */
    String demo(Map<String, String> env) throws Exception {
      return onNode1(job(env, nodes.size(), "demo -np " + 2 * nodes.size(), prefix));
    }

    /** The script that runs {@code command} of bin/mpi-build over nodes node1..nodeN through a hostfile. */
    static String job(Map<String, String> env, int size, String command) {
      return job(env, size, command, "node");
    }

    static String job(Map<String, String> env, int size, String command, String prefix) {
      StringBuilder x = new StringBuilder();
      StringBuilder exports = new StringBuilder();
      env.forEach((k, v) -> {
        x.append(" -x ").append(k);
        exports.append("export ").append(k).append("='").append(v).append("'; ");
      });
      return exports + setup(size, prefix) + " && MPIRUN_ARGS='--hostfile /etc/mpi-build/hostfile --mca "
          + "plm_rsh_agent ssh" + x + "' bin/mpi-build " + command;
    }

    /** The hostfile and ssh config for PREFIX1..PREFIXN, then a wait until every node answers ssh. */
    static String setup(int size, String prefix) {
      List<String> names = new ArrayList<>();
      for (int n = 1; n <= size; n++) {
        names.add(prefix + n);
      }
      return "scripts/cluster-setup /etc/mpi-build " + String.join(" ", names) + " && for h in "
          + String.join(" ", names) + "; do for i in $(seq 30); do ssh $h true && break; sleep 1; done; done";
    }

    @Override
    public void close() {
      nodes.forEach(GenericContainer::stop);
      network.close();
    }
  }

  static String summary(String out) {
    return out.lines().filter(l -> l.startsWith(SUMMARY_PREFIX)).reduce((a, b) -> b).orElse("(no summary)\n" + out);
  }

  /** The node column of the demo's table, by rank. */
  static Map<Integer, String> nodesByRank(String out) {
    Map<Integer, String> m = new LinkedHashMap<>();
    out.lines().map(String::trim).filter(l -> l.matches("\\d+\\s+(root|root/hit|receiver)\\s+\\S+\\s.*yes"))
        .forEach(l -> {
          String[] f = l.split("\\s+");
          m.put(Integer.parseInt(f[0]), f[2]);
        });
    return m;
  }

  @Test
  void theImageRunsTheDemoWithFourRanksInOneContainer() {
    try (GenericContainer<?> node = new GenericContainer<>(DockerImageName.parse(IMAGE))
        .withStartupCheckStrategy(new OneShotStartupCheckStrategy().withTimeout(Duration.ofMinutes(5)))) {
      long t0 = System.nanoTime();
      node.start();
      String logs = node.getLogs();
      assertTrue(logs.contains("summary: ranks=4 compiles=1 loaded=4 verified=4 backend=opencl"), logs);
      System.out.println("DockerIT: one container, 4 ranks: " + (System.nanoTime() - t0) / 1_000_000 + " ms");
    }
  }

  @Test
  void mpirunSpansTwoAndThreeNodesWithTwoRanksEach() throws Exception {
    for (int size : new int[] {2, 3}) {
      long t0 = System.nanoTime();
      try (Cluster cluster = new Cluster(size, null)) {
        String out = cluster.demo(Map.of());
        int ranks = 2 * size;
        assertEquals("summary: ranks=" + ranks + " compiles=1 loaded=" + ranks + " verified=" + ranks
            + " backend=opencl cache_hits=0", summary(out), out);
        Map<Integer, String> where = nodesByRank(out);
        assertEquals(ranks, where.size(), out);
        for (int n = 1; n <= size; n++) {
          String node = "node" + n;
          assertEquals(2, where.values().stream().filter(node::equals).count(), node + " runs 2 ranks: " + where);
        }
        System.out.println("DockerIT: " + size + " nodes, " + ranks + " ranks, one compile: " + where + ", "
            + (System.nanoTime() - t0) / 1_000_000 + " ms");
      }
    }
  }

  @Test
  void aSharedCacheAndNodeLocalCachesServeTheNextJob() throws Exception {
    Path shared = Files.createTempDirectory("mpi-build-shared-fs");
    try (Cluster cluster = new Cluster(2, shared)) {
      Map<String, String> env = Map.of("MPI_BUILD_CACHE_DIR", "/shared/cache", "MPI_BUILD_NODE_CACHE_DIR",
          "/local/cache");
      String first = cluster.demo(env);
      assertEquals("summary: ranks=4 compiles=1 loaded=4 verified=4 backend=opencl cache_hits=0", summary(first),
          first);
      for (GenericContainer<?> node : cluster.nodes) {
        Container.ExecResult ls = node.execInContainer("bash", "-c", "ls /local/cache/entries | grep -c kbin");
        assertEquals("1", ls.getStdout().trim(), "one node-local write on " + node.getContainerName() + ": "
            + ls.getStdout() + ls.getStderr());
      }
      // Without the shared entry, a hit can only come from the root's node-local cache.
      cluster.onNode1("rm /shared/cache/entries/*.kbin");
      String second = cluster.demo(env);
      assertEquals("summary: ranks=4 compiles=0 loaded=4 verified=4 backend=opencl cache_hits=1", summary(second),
          second);
      System.out.println("DockerIT: shared + node-local caches: job 1 one compile and one local write per node; "
          + "job 2 no compile, served from node1's local cache");
    } finally {
      Mpirun.delete(shared);
    }
  }

  @Test
  void losingANodeWhileTheRootCompilesEndsTheJobAndTheNextJobSucceeds() throws Exception {
    Path shared = Files.createTempDirectory("mpi-build-shared-fs");
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newSingleThreadExecutor();
    try (Cluster cluster = new Cluster(3, shared)) {
      Map<String, String> env = Map.of("MPI_BUILD_CACHE_DIR", "/shared/cache");
      java.util.concurrent.Future<Container.ExecResult> job = pool.submit(() -> cluster.nodes.get(0).execInContainer(
          "bash", "-c", Cluster.job(env, 3, "run -np 6 -cp 'programs/target/mpi-build-programs.jar:"
              + "programs/target/lib/*' org.mpibuild.programs.Faults slow-compile")));
      awaitRootCompile(shared.resolve("cache/locks"), 90);
      GenericContainer<?> node3 = cluster.nodes.get(2);
      long killed = System.nanoTime();
      node3.getDockerClient().killContainerCmd(node3.getContainerId()).exec();
      Container.ExecResult r = job.get(90, TimeUnit.SECONDS);
      long endMillis = (System.nanoTime() - killed) / 1_000_000;
      String out = r.getStdout() + r.getStderr();
      assertTrue(r.getExitCode() != 0, "mpirun must fail after losing a node\n" + out);
      assertTrue(out.contains("node3"), "the message names the lost node\n" + out);
      assertTrue(endMillis < 60_000, "the survivors ended " + endMillis + " ms after the node was lost\n" + out);
      try (java.util.stream.Stream<Path> s = Files.list(shared.resolve("cache/entries"))) {
        assertEquals(List.of(), s.toList(), "no torn or half-written entry");
      }
      // The next job, on the two nodes left, takes over the dead root's lock and builds.
      String next = cluster.onNode1(Cluster.job(env, 2, "demo -np 4"));
      assertEquals("summary: ranks=4 compiles=1 loaded=4 verified=4 backend=opencl cache_hits=0", summary(next), next);
      System.out.println("DockerIT: node3 lost mid-compile: every survivor ended " + endMillis + " ms after the "
          + "kill, mpirun exit " + r.getExitCode() + "; the next job on node1, node2 built and verified");
    } finally {
      pool.shutdownNow();
      Mpirun.delete(shared);
    }
  }

  /** Waits until a root holds a cache lock in {@code locks} (its compile has started); fails after the time. */
  static void awaitRootCompile(Path locks, long seconds) throws Exception {
    long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (!hasLock(locks) && System.nanoTime() < waitUntil) {
      Thread.sleep(200);
    }
    assertTrue(hasLock(locks), "the root never started its compile (no cache lock)");
  }

  private static boolean hasLock(Path locks) throws java.io.IOException {
    if (!Files.isDirectory(locks)) {
      return false;
    }
    try (java.util.stream.Stream<Path> s = Files.list(locks)) {
      return s.anyMatch(f -> f.getFileName().toString().endsWith(".lock"));
    }
  }

  @Test
  void twoMultiNodeJobsStartedTogetherOnAnEmptySharedCacheCompileOnce() throws Exception {
    Path shared = Files.createTempDirectory("mpi-build-shared-fs");
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(2);
    try (Cluster a = new Cluster(2, shared, "a");
         Cluster b = new Cluster(2, shared, "b")) {
      // One user: the signing key lives in the shared home, as on a cluster (each container's own home would
      // make two users, who rightly do not trust each other's entries).
      Map<String, String> env = Map.of("MPI_BUILD_CACHE_DIR", "/shared/cache", "MPI_BUILD_SIGNING_KEY",
          "/shared/home/signing-key");
      java.util.concurrent.Future<String> ja = pool.submit(() -> a.demo(env));
      java.util.concurrent.Future<String> jb = pool.submit(() -> b.demo(env));
      String sa = summary(ja.get(300, TimeUnit.SECONDS));
      String sb = summary(jb.get(300, TimeUnit.SECONDS));
      int compiles = compiles(sa) + compiles(sb);
      assertEquals(1, compiles, "one compile across both jobs\n" + sa + "\n" + sb);
      assertTrue(sa.contains("verified=4") && sb.contains("verified=4"), sa + "\n" + sb);
      System.out.println("DockerIT: two 2-node jobs together on one empty shared cache: " + sa + " | " + sb);
    } finally {
      pool.shutdownNow();
      Mpirun.delete(shared);
    }
  }

  private static int compiles(String summary) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("compiles=(\\d+)").matcher(summary);
    assertTrue(m.find(), summary);
    return Integer.parseInt(m.group(1));
  }

  @Test
  void nodesWithDifferentDevicesBuildOneBinaryPerTarget() throws Exception {
    try (Cluster cluster = new Cluster(2, null)) {
      // PoCL's two CPU drivers are two targets: node1's ranks use pthread, node2's the basic driver.
      String rank = "/opt/mpi-build/bin/mpi-build-rank -cp '/opt/mpi-build/examples/target/mpi-build-examples.jar:"
          + "/opt/mpi-build/examples/target/lib/*' org.mpibuild.examples.Demo";
      String out = cluster.onNode1(Cluster.setup(2, "node") + " && mpirun --allow-run-as-root"
          + " --oversubscribe --mca plm_rsh_agent ssh -np 2 -host node1:2 -x POCL_DEVICES=pthread " + rank
          + " : -np 2 -host node2:2 -x POCL_DEVICES=basic " + rank);
      assertEquals("summary: ranks=4 compiles=2 loaded=4 verified=4 backend=opencl cache_hits=0", summary(out),
          "one compile per target, each rank loads its own\n" + out);
      System.out.println("DockerIT: two nodes, two OpenCL targets (PoCL pthread and basic): " + summary(out));
    }
  }

  @Test
  void fileOperationsOnTheSharedCacheDoNotGrowWithRanksPerNode() throws Exception {
    Path shared = Files.createTempDirectory("mpi-build-shared-fs");
    try (Cluster cluster = new Cluster(2, shared)) {
      Map<Integer, Long> opsByRanks = new LinkedHashMap<>();
      for (int perNode : new int[] {1, 2}) {
        int ranks = 2 * perNode;
        Map<String, String> env = Map.of("MPI_BUILD_CACHE_DIR", "/shared/cache" + perNode, "MPI_BUILD_STATS_JSON",
            "/shared/stats" + perNode + ".json");
        String out = cluster.onNode1(Cluster.job(env, 2, "demo -np " + ranks).replace("--hostfile",
            "--map-by node --hostfile"));
        assertEquals("summary: ranks=" + ranks + " compiles=1 loaded=" + ranks + " verified=" + ranks
            + " backend=opencl cache_hits=0", summary(out), out);
        com.fasterxml.jackson.databind.JsonNode stats = new com.fasterxml.jackson.databind.ObjectMapper()
            .readTree(Files.readString(shared.resolve("stats" + perNode + ".json")));
        opsByRanks.put(perNode, stats.get("cache_file_operations").asLong());
      }
      assertEquals(opsByRanks.get(1), opsByRanks.get(2), "file operations on the shared cache per job, by ranks per "
          + "node: " + opsByRanks);
      System.out.println("DockerIT: shared-cache file operations per cold job, by ranks per node (2 nodes): "
          + opsByRanks);
    } finally {
      Mpirun.delete(shared);
    }
  }
}
