package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.testcontainers.containers.BindMode;
import org.testcontainers.containers.Container;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.Network;
import org.testcontainers.utility.DockerImageName;

/**
 * Launched by Slurm: Debian 12's Slurm 22.05 in containers of the runtime image (docker/slurm/Containerfile),
 * one controller ({@code ctl}) and two compute nodes ({@code c1}, {@code c2}) of 2 CPUs on an internal network
 * the test creates, sharing one directory ({@code /shared}, a parallel file system's stand-in). Jobs are
 * submitted with sbatch from the controller, as a user would. Without a container engine every test is
 * skipped, printing why.
 */
class SlurmIT {
  static final String IMAGE = "localhost/mpi-build-slurm:it";
  static final Pattern JOB_ID = Pattern.compile("Submitted batch job (\\d+)");
  /** The shared cache directory the README's job script names; each test gives its jobs their own. */
  static final String README_CACHE = "/shared/mpi-build-cache";
  static final String README_NODE_CACHE = "/tmp/mpi-build-cache-$(id -u)";

  /** The README's job script with caches of the test's own (name), shared and node-local. */
  static String readmeJob(String name) throws Exception {
    return readmeJob().replace(README_CACHE, "/shared/cache-" + name).replace(README_NODE_CACHE, "/tmp/cache-" + name);
  }
  private static String unavailable;
  private static SlurmCluster cluster;
  private static Path shared;

  @BeforeAll
  static void startCluster() throws Exception {
    unavailable = RuntimeImage.ensure();
    if (unavailable != null) {
      return;
    }
    long t0 = System.nanoTime();
    // The build context: the recipe and the script that starts a node in its role, nothing else.
    Path context = Files.createTempDirectory("mpi-build-slurm-image");
    Files.copy(Mpirun.REPO.resolve("docker/slurm/Containerfile"), context.resolve("Containerfile"));
    Files.copy(Mpirun.REPO.resolve("scripts/slurm-node"), context.resolve("slurm-node"));
    RuntimeImage.build(IMAGE, context, List.of("BASE=" + RuntimeImage.IMAGE));
    System.out.println("SlurmIT: image " + IMAGE + " built in " + (System.nanoTime() - t0) / 1_000_000 + " ms");
    shared = Files.createTempDirectory("mpi-build-slurm-shared");
    t0 = System.nanoTime();
    cluster = new SlurmCluster(shared);
    System.out.println("SlurmIT: cluster ctl + c1, c2 idle in " + (System.nanoTime() - t0) / 1_000_000 + " ms; "
        + "srun --mpi=list: " + cluster.onController("srun --mpi=list 2>&1").replace('\n', ' '));
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
    if (shared != null) {
      Mpirun.delete(shared);
    }
  }

  @BeforeEach
  void needsTheCluster(org.junit.jupiter.api.TestInfo test) {
    if (unavailable != null) {
      System.out.println("SlurmIT: " + test.getDisplayName() + " skipped: " + unavailable);
      Assumptions.abort(unavailable);
    }
  }

  /** The job script of the README's "On a Slurm cluster" section, between its markers. */
  static String readmeJob() throws Exception {
    return readmeBlock("slurm:job");
  }

  /** The README's mpirun line, the alternative to the job script's srun line. */
  static String readmeMpirunLine() throws Exception {
    return readmeBlock("slurm:mpirun");
  }

  /** The shell block of the README between {@code <!-- NAME:begin -->} and {@code <!-- NAME:end -->}. */
  static String readmeBlock(String name) throws Exception {
    String readme = Files.readString(Mpirun.REPO.resolve("docs/slurm.md"));
    Matcher m = Pattern.compile("(?s)<!-- " + Pattern.quote(name) + ":begin -->\\s*```sh\\n(.*?)```\\s*<!-- "
        + Pattern.quote(name) + ":end -->").matcher(readme);
    assertTrue(m.find(), "docs/slurm.md has a shell block between <!-- " + name + ":begin --> and <!-- " + name
        + ":end -->");
    return m.group(1);
  }

  @Test
  void theReadmesJobScriptRunsTheDemoOnTwoNodesWithSrun() throws Exception {
    String out = cluster.sbatch("demo-srun", readmeJob("srun"), Map.of());
    assertEquals("summary: ranks=4 compiles=1 loaded=4 verified=4 backend=opencl cache_hits=0", DockerIT.summary(out),
        out);
    twoRanksOnEachNode(out);
    // The same script again: the caches it names serve the next job, which compiles nothing.
    String again = cluster.sbatch("demo-srun-again", readmeJob("srun"), Map.of());
    assertEquals("summary: ranks=4 compiles=0 loaded=4 verified=4 backend=opencl cache_hits=1",
        DockerIT.summary(again), again);
  }

  @Test
  void theReadmesMpirunVariantRunsInTheAllocation() throws Exception {
    String script = readmeJob("mpirun").replaceAll("(?s)srun --mpi=pmix .*?org\\.mpibuild\\.examples\\.Demo\\n",
        java.util.regex.Matcher.quoteReplacement(readmeMpirunLine()));
    assertTrue(script.contains("mpirun"), script);
    String out = cluster.sbatch("demo-mpirun", script, Map.of());
    assertEquals("summary: ranks=4 compiles=1 loaded=4 verified=4 backend=opencl cache_hits=0", DockerIT.summary(out),
        out);
    twoRanksOnEachNode(out);
  }

  static void twoRanksOnEachNode(String out) {
    Map<Integer, String> where = DockerIT.nodesByRank(out);
    assertEquals(4, where.size(), out);
    for (String node : List.of("c1", "c2")) {
      assertEquals(2, where.values().stream().filter(node::equals).count(), node + " runs 2 ranks: " + where);
    }
  }

  @Test
  void theLibraryFindsItsRanksUnderSrunOnEitherBinding() throws Exception {
    String program = "srun --mpi=pmix /opt/mpi-build/bin/mpi-build-rank -cp "
        + "'/opt/mpi-build/programs/target/mpi-build-programs.jar:/opt/mpi-build/programs/target/lib/*' "
        + "org.mpibuild.programs.Portable\n";
    // The image's Java 17: the mpi.jar binding, chosen with no flag.
    String jar = cluster.sbatch("portable-mpijava", "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n"
        + program, Map.of());
    PortableResults.check(jar.lines().toList(), 4, "mpi.jar_COMM_WORLD");
    // A JDK 22+ (the host's, mounted): the FFM binding, chosen with no flag, over Open MPI's library.
    if (cluster.ffmJava == null) {
      System.out.println("SlurmIT: the FFM half skipped: no JDK 22+ on this machine to mount (scripts/provision)");
      Assumptions.abort("no JDK 22+ for the FFM binding");
    }
    String ffm = cluster.sbatch("portable-ffm", "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n"
        + "export MPI_BUILD_JAVA=" + cluster.ffmJava + " JAVA_TOOL_OPTIONS=--enable-native-access=ALL-UNNAMED\n"
        + program, Map.of());
    PortableResults.check(ffm.lines().toList(), 4, "FFM_(OPEN_MPI)");
  }

  @Test
  void precompileAsAStepSpreadsTheCompilesAndTheNextStepStartsWarm() throws Exception {
    String programs = "'programs/target/mpi-build-programs.jar:programs/target/lib/*'";
    String script = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\nset -e\n"
        + "cd /opt/mpi-build\n"
        // A first job records its kernels: the demo's, and a batch of 8.
        + "export MPI_BUILD_RECORD=/shared/precompile/kernels.jsonl MPI_BUILD_CACHE_DIR=/shared/precompile/record\n"
        + "srun --mpi=pmix bin/mpi-build-rank -cp 'examples/target/mpi-build-examples.jar:examples/target/lib/*' "
        + "org.mpibuild.examples.Demo | grep summary:\n"
        + "srun --mpi=pmix bin/mpi-build-rank -cp " + programs + " org.mpibuild.programs.Scale batch 8 slurm "
        + "| grep 'RESULT mode=batch rank=0'\n"
        + "unset MPI_BUILD_RECORD\n"
        + "echo step: precompile\n"
        + "srun --mpi=pmix bin/mpi-build precompile /shared/precompile/kernels.jsonl --dir /shared/precompile/cache "
        + "--backend opencl --no-progress\n"
        + "echo step: warm\n"
        + "MPI_BUILD_CACHE_DIR=/shared/precompile/cache srun --mpi=pmix bin/mpi-build-rank "
        + "-cp 'examples/target/mpi-build-examples.jar:examples/target/lib/*' org.mpibuild.examples.Demo\n";
    Files.createDirectories(shared.resolve("precompile"));
    String out = cluster.sbatch("precompile", script, Map.of());
    String precompile = out.substring(out.indexOf("step: precompile"), out.indexOf("step: warm"));
    assertTrue(precompile.matches("(?s).*compiled\\s+9\\n.*failed\\s+0\\n.*"),
        "the step compiled the 9 recorded kernels once each:\n" + out);
    java.util.Set<String> ranks = new java.util.TreeSet<>();
    Matcher m = Pattern.compile("precompile: \\[\\d+/9\\] kernels \\S+ ok \\(rank (\\d+),").matcher(precompile);
    while (m.find()) {
      ranks.add(m.group(1));
    }
    assertEquals(java.util.Set.of("0", "1", "2", "3"), ranks, "the compiles were spread over the step's 4 ranks:\n"
        + precompile);
    String warm = DockerIT.summary(out.substring(out.indexOf("step: warm")));
    assertEquals("summary: ranks=4 compiles=0 loaded=4 verified=4 backend=opencl cache_hits=1", warm, out);
    System.out.println("SlurmIT: precompile step: 9 kernels compiled on ranks " + ranks + "; the next step: " + warm);
  }

  @Test
  void doctorInsideAJobReportsSlurm() throws Exception {
    String out = cluster.sbatch("doctor", "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
        + "srun --mpi=pmix -N1 -n1 /opt/mpi-build/bin/mpi-build doctor || true\n", Map.of());
    Matcher m = Pattern.compile("slurm: +Slurm's srun through PMIx, job (\\d+) step 0, task 0 of 1, nodes c\\[1-2\\] "
        + "\\(this is c1\\)").matcher(out);
    assertTrue(m.find(), "doctor names the launcher, the job and step, and the node list:\n" + out);
    assertTrue(out.contains("PMIX_RANK"), "the launcher's variables:\n" + out);
    System.out.println("SlurmIT: doctor in a job step: " + m.group().replaceAll(" +", " "));
  }

  @Test
  void scancelDuringTheRootsCompileEndsEveryRankAndLeavesNothingBehind() throws Exception {
    Path cache = shared.resolve("cancel-cache");
    String script = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n#SBATCH --output=/shared/cancel.out\n"
        + "export MPI_BUILD_CACHE_DIR=/shared/cancel-cache\n"
        + "srun --mpi=pmix /opt/mpi-build/bin/mpi-build-rank -cp "
        + "'/opt/mpi-build/programs/target/mpi-build-programs.jar:/opt/mpi-build/programs/target/lib/*' "
        + "org.mpibuild.programs.Faults slow-compile\n";
    Files.writeString(shared.resolve("cancel.sbatch"), script);
    String submitted = cluster.onController("cd /shared && sbatch cancel.sbatch");
    Matcher id = JOB_ID.matcher(submitted);
    assertTrue(id.find(), submitted);
    DockerIT.awaitRootCompile(cache.resolve("locks"), 120);
    assertTrue(ranksRunning(), "the job's ranks run before scancel");
    long cancelled = System.nanoTime();
    cluster.onController("scancel " + id.group(1));
    long endMillis;
    while (true) {
      boolean queued = !cluster.onController("squeue -h -j " + id.group(1) + " 2>/dev/null || true").isBlank();
      boolean running = ranksRunning();
      endMillis = (System.nanoTime() - cancelled) / 1_000_000;
      if (!queued && !running) {
        break;
      }
      assertTrue(endMillis < 60_000, "ranks still running " + endMillis + " ms after scancel");
      Thread.sleep(200);
    }
    assertTrue(endMillis < 30_000, "every rank ended within 30 s of scancel (KillWait=5): " + endMillis + " ms");
    try (java.util.stream.Stream<Path> s = Files.list(cache.resolve("entries"))) {
      assertEquals(List.of(), s.toList(), "no torn or half-written entry");
    }
    // The next job takes over the cancelled root's lock and builds.
    String next = cluster.sbatch("after-cancel", readmeJob("cancel").replace("/shared/cache-cancel", "/shared/cancel-cache"), Map.of());
    assertEquals("summary: ranks=4 compiles=1 loaded=4 verified=4 backend=opencl cache_hits=0", DockerIT.summary(next),
        next);
    System.out.println("SlurmIT: scancel during the root's compile: every rank gone " + endMillis
        + " ms after; the next job built and verified on 4 ranks");
  }

  /** Whether a rank of the Faults program runs on c1 or c2 ([o]: the pattern must not match pgrep's shell). */
  private static boolean ranksRunning() throws Exception {
    return !cluster.onNode(1, "pgrep -f '[o]rg.mpibuild.programs.Faults' || true").isBlank()
        || !cluster.onNode(2, "pgrep -f '[o]rg.mpibuild.programs.Faults' || true").isBlank();
  }

  /** The controller and compute nodes, each started in its role once every container knows the others. */
  static final class SlurmCluster implements AutoCloseable {
    final Network network = Network.builder().createNetworkCmdModifier(cmd -> cmd.withInternal(true)).build();
    final List<GenericContainer<?>> containers = new ArrayList<>();
    final String ffmJava;
    private int jobs;

    SlurmCluster(Path shared) throws Exception {
      Path jdk = FfmIT.JDK;
      ffmJava = Files.isExecutable(jdk.resolve("bin/java")) ? jdk.resolve("bin/java").toString() : null;
      Map<String, String> ips = new LinkedHashMap<>();
      for (String name : List.of("ctl", "c1", "c2")) {
        GenericContainer<?> c = new GenericContainer<>(DockerImageName.parse(IMAGE)).withNetwork(network)
            .withCreateContainerCmdModifier(cmd -> cmd.withHostName(name))
            .withFileSystemBind(shared.toString(), "/shared", BindMode.READ_WRITE)
            .withEnv("OMPI_ALLOW_RUN_AS_ROOT", "1").withEnv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .withCommand("sleep", "infinity");
        if (ffmJava != null) {
          c.withFileSystemBind(jdk.toString(), jdk.toString(), BindMode.READ_ONLY);
        }
        c.withSharedMemorySize(512L << 20);
        c.start();
        containers.add(c);
        ips.put(name, c.getContainerInfo().getNetworkSettings().getNetworks().values().iterator().next().getIpAddress());
      }
      StringBuilder hosts = new StringBuilder();
      ips.forEach((n, ip) -> hosts.append(ip).append(' ').append(n).append('\n'));
      for (GenericContainer<?> c : containers) {
        exec(c, "printf '" + hosts + "' >> /etc/hosts");
      }
      exec(containers.get(0), "slurm-node controller ctl c1 c2");
      exec(containers.get(1), "slurm-node compute ctl c1 c2");
      exec(containers.get(2), "slurm-node compute ctl c1 c2");
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
      String state = "";
      while (System.nanoTime() < deadline) {
        state = onController("sinfo -h -o '%n %T' 2>&1 || true");
        if (state.contains("c1 idle") && state.contains("c2 idle")) {
          return;
        }
        Thread.sleep(500);
      }
      throw new AssertionError("the Slurm nodes never became idle: " + state + "\n"
          + onController("cat /var/log/slurm/slurmctld.log | tail -20"));
    }

    String onController(String script) throws Exception {
      return exec(containers.get(0), script);
    }

    String onNode(int n, String script) throws Exception {
      return exec(containers.get(n), script);
    }

    static String exec(GenericContainer<?> c, String script) throws Exception {
      Container.ExecResult r = c.execInContainer("bash", "-c", script);
      String out = r.getStdout() + r.getStderr();
      assertEquals(0, r.getExitCode(), "`" + script + "` on " + c.getContainerName() + ":\n" + out);
      return out;
    }

    /**
     * Submits {@code script} with {@code sbatch} from the controller in a directory of its own under /shared,
     * with {@code env} exported; returns the job's output file once the job ends, failing unless it
     * completed with exit code 0.
     */
    synchronized String sbatch(String name, String script, Map<String, String> env) throws Exception {
      String dir = "/shared/jobs/" + (++jobs) + "-" + name;
      Path host = shared.resolve("jobs").resolve(jobs + "-" + name);
      Files.createDirectories(host);
      Files.writeString(host.resolve("job.sbatch"), script, StandardCharsets.UTF_8);
      StringBuilder exports = new StringBuilder();
      env.forEach((k, v) -> exports.append("export ").append(k).append("='").append(v).append("'; "));
      long t0 = System.nanoTime();
      String id = onController(exports + "cd " + dir + " && sbatch --parsable --output=" + dir + "/job.out job.sbatch")
          .strip();
      assertTrue(id.matches("\\d+"), "sbatch " + name + " answered: " + id);
      // sbatch --wait polls every few seconds; squeue every 200 ms tells the job's end to within that.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(600);
      while (!onController("squeue -h -j " + id + " 2>/dev/null || true").isBlank()) {
        assertTrue(System.nanoTime() < deadline, "job " + name + " (" + id + ") still queued or running after 600 s");
        Thread.sleep(200);
      }
      long millis = (System.nanoTime() - t0) / 1_000_000;
      String state = onController("scontrol -o show job " + id + " | grep -o 'JobState=[A-Z_]* .*ExitCode=[0-9:]*' || true");
      String out = Files.exists(host.resolve("job.out")) ? Files.readString(host.resolve("job.out")) : "(no output file)";
      assertTrue(state.contains("JobState=COMPLETED") && state.contains("ExitCode=0:0"), "job " + name + " (" + id
          + ") ended " + state + ":\n" + out);
      System.out.println("SlurmIT: job " + name + " (" + id + ") completed in " + millis + " ms");
      return out;
    }

    @Override
    public void close() {
      containers.forEach(GenericContainer::stop);
      network.close();
    }
  }
}
