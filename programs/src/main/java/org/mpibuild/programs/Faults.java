package org.mpibuild.programs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import mpi.MPI;
import mpi.MPIException;
import org.mpibuild.BinaryData;
import org.mpibuild.CacheAdmin;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.examples.Saxpy;
import org.mpibuild.mpijava.MpiJava;
import org.mpibuild.opencl.OpenClKernel;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Compilation;
import org.mpibuild.testkit.CorruptingCommunicator;
import org.mpibuild.testkit.DelegatingBackend;

/**
 * The fault table: one case per run, named by the first argument, on every rank of a real mpirun job.
 * Each rank prints, per step of the case:
 *
 * <pre>FAULT case=NAME step=S rank=R outcome=ok|EXCEPTION compiled=B verified=B ms=T message=ONE-LINE</pre>
 *
 * Faults are injected from outside the library, as a user's environment would produce them: backend and
 * communicator wrappers (a compiler that hangs or crashes, a process killed with SIGKILL, a byte flipped
 * after the digest was computed), files changed on disk, a full file system.
 */
public final class Faults {
  private Faults() {}

  public static void main(String[] args) throws Exception {
    String name = args[0];
    MPI.Init(args);
    int rank = MPI.COMM_WORLD.getRank();
    try {
      if (!(compilerCase(name, rank) || disagreementCase(name, rank) || dataCase(name, rank)
          || environmentCase(name, rank))) {
        throw new IllegalArgumentException("unknown fault case '" + name + "'");
      }
    } finally {
      MPI.Finalize();
    }
  }

  /**
   * Runs case {@code name} if it is one where the compiler fails (an error, a hang past the timeout, a crash, a
   * root or a rank killed, a slow compile); false if it is none of them.
   */
  private static boolean compilerCase(String name, int rank) throws Exception {
    switch (name) {
      case "compile-error" -> withWorld(mb -> step(name, "1", mb, () -> mb.mpiBuildKernel(Scenarios.BROKEN, 0)));
      case "compiler-hang" -> {
        try (MpiBuild mb = MpiBuild.builder().backend(new Slow(Scenarios.openCl(), 600_000))
            .compileTimeout(Duration.ofSeconds(2)).build()) {
          step(name, "1", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0));
        }
      }
      case "compiler-crash" -> {
        try (MpiBuild mb = MpiBuild.builder().backend(new Crashing(Scenarios.openCl())).build()) {
          step(name, "1", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0));
        }
      }
      case "root-killed" -> {
        try (MpiBuild mb = MpiBuild.builder().backend(rank == 0 ? new Killing(Scenarios.openCl()) : Scenarios.openCl())
            .build()) {
          step(name, "1", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0));
        }
      }
      case "rank-killed" -> withWorld(mb -> {
        if (rank == 2) {
          killSelf();
        }
        step(name, "1", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0));
      });
      case "slow-compile" -> {
        // The root's compile takes 30 s (a node is lost meanwhile, in the container tests); it prints the
        // moment it starts, once it holds the cache lock.
        try (MpiBuild mb = MpiBuild.builder().backend(new Slow(Scenarios.openCl(), 30_000)).build()) {
          step(name, "1", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0));
        }
      }
      default -> {
        return false;
      }
    }
    return true;
  }

  /**
   * Runs case {@code name} if it is one where the ranks disagree (on the request, the settings, the root, or when
   * they arrive); false if it is none of them.
   */
  private static boolean disagreementCase(String name, int rank) throws Exception {
    switch (name) {
      case "mismatch-source" -> withWorld(mb -> step(name, "1", mb, () -> mb.mpiBuildKernel(
          rank == 3 ? KernelSource.of(Saxpy.SOURCE + "\n// changed").withKernels("saxpy") : Saxpy.REQUEST, 0)));
      case "mismatch-options" -> withWorld(mb -> step(name, "1", mb, () -> mb.mpiBuildKernel(
          rank == 3 ? Saxpy.REQUEST.withOptions("-cl-mad-enable") : Saxpy.REQUEST, 0)));
      case "mismatch-kernels" -> withWorld(mb -> step(name, "1", mb, () -> mb.mpiBuildKernel(
          rank == 3 ? Saxpy.REQUEST.withKernels() : Saxpy.REQUEST, 0)));
      case "settings-batch-ranks" -> opening(name, rank, MpiBuild.builder().batchRanks(rank == 3 ? 1 : 0));
      case "settings-node-cache" -> opening(name, rank, rank == 1 ? MpiBuild.builder().set(
          "MPI_BUILD_NODE_CACHE_DIR", System.getenv("MPI_BUILD_CACHE_DIR") + "-node") : MpiBuild.builder());
      case "late-rank" -> withWorld(mb -> {
        if (rank == 2) {
          Thread.sleep(60_000); // still computing: it enters the build long after the deadline
        }
        step(name, "1", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0));
      });
      case "different-roots" -> withWorld(mb -> step(name, "1", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST,
          rank == 3 ? 1 : 0)));
      case "deadline-off-one-rank" -> opening(name, rank, rank == 1
          ? MpiBuild.builder().set("MPI_BUILD_COLLECTIVE_TIMEOUT", "off") : MpiBuild.builder());
      default -> {
        return false;
      }
    }
    return true;
  }

  /**
   * Runs case {@code name} if it is one where the bytes go wrong (a payload corrupted in transit, a cache entry
   * changed, a full disk, stale locks, a foreign binary, small chunks); false if it is none of them.
   */
  private static boolean dataCase(String name, int rank) throws Exception {
    switch (name) {
      case "payload-corrupted" -> {
        Communicator comm = MpiJava.communicator(MPI.COMM_WORLD);
        // 4 KiB chunks: the first message carries the header, the metadata and the start of the binary,
        // and the rest of the binary follows in pieces; rank 2 corrupts the first piece.
        try (MpiBuild mb = MpiBuild.builder().communicator(rank == 2 ? new CorruptingCommunicator(comm, 2) : comm)
            .chunkBytes(4096).build()) {
          step(name, "1", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0));
        } finally {
          comm.close();
        }
      }
      case "cache-corrupted" -> withWorld(mb -> {
        step(name, "cold", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0));
        changeEntry(rank, bytes -> {
          bytes[bytes.length / 2] ^= 0x10;
          return bytes;
        });
        step(name, "flipped", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0));
        changeEntry(rank, bytes -> bytes);
        step(name, "intact", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0));
        changeEntry(rank, bytes -> Arrays.copyOf(bytes, bytes.length / 3));
        step(name, "truncated", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0));
      });
      case "cache-disk-full" -> withWorld(mb -> step(name, "1", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0)));
      case "stale-lock-dead-holder" -> {
        plantLock(rank, deadHolder(), 0);
        withWorld(mb -> step(name, "1", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0)));
      }
      case "stale-lock-other-host" -> {
        plantLock(rank, "host=another-node\npid=4242\nstart=0\nacquired=0\n", 120_000);
        withWorld(mb -> step(name, "1", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0)));
      }
      case "foreign-blob" -> withWorld(mb -> {
        step(name, "other-target", mb, () -> mb.buildKernelFromBinaryData(foreignBlob("opencl", "another-device")));
        step(name, "other-backend", mb, () -> mb.buildKernelFromBinaryData(foreignBlob("cuda", null)));
      });
      case "chunked" -> {
        try (MpiBuild mb = MpiBuild.builder().chunkBytes(1000).build()) {
          step(name, "1", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0));
        }
      }
      default -> {
        return false;
      }
    }
    return true;
  }

  /**
   * Runs case {@code name} if it is one about the environment (no device on one rank, a rank
   * waiting without a deadline, an asynchronous build never started); false if it is none of them.
   */
  private static boolean environmentCase(String name, int rank) throws Exception {
    switch (name) {
      case "no-device" -> {
        if (rank == 1) {
          System.setProperty("mpibuild.opencl.platform", "no-such-platform");
        }
        long t0 = System.nanoTime();
        try (MpiBuild mb = MpiBuild.create()) {
          report(name, "1", rank, "ok", false, false, t0, "");
        } catch (RuntimeException e) {
          report(name, "1", rank, e.getClass().getSimpleName(), false, false, t0, e.getMessage());
        }
      }
      case "off-waits-idle" -> withWorld(mb -> {
        // MPI_BUILD_COLLECTIVE_TIMEOUT=off: rank 1 waits 4 s for rank 0, still computing, and measures what
        // that wait costs it in CPU time.
        if (rank == 0) {
          Thread.sleep(4_000);
        }
        long cpu = cpuNanos();
        long t0 = System.nanoTime();
        mb.mpiBuildKernel(Saxpy.REQUEST, 0).close();
        System.out.println("WAITED rank=" + rank + " wall_ms=" + (System.nanoTime() - t0) / 1_000_000 + " cpu_ms="
            + (cpuNanos() - cpu) / 1_000_000);
      });
      case "async-never-started" -> withWorld(mb -> {
        // MPI_BUILD_PROGRESS=caller: rank 1 never starts the asynchronous build that rank 0 waits for.
        if (rank == 1) {
          Thread.sleep(100_000);
        }
        step(name, "1", mb, () -> mb.mpiBuildKernelAsync(Saxpy.REQUEST, 0).join());
      });
      case "async-computes-past-deadline" -> withWorld(mb -> {
        // Caller mode, deadline 2 s: rank 1 starts the asynchronous build, then computes for 6 s without
        // touching the library. It has entered the build: nobody may abort.
        long t0 = System.nanoTime();
        org.mpibuild.KernelFuture f = mb.mpiBuildKernelAsync(Saxpy.REQUEST, 0);
        if (rank == 1) {
          Thread.sleep(6_000);
        }
        step(name, "1", mb, f::join);
        report(name, "waited", rank, "ok", false, false, t0, mb.asyncProgress());
      });
      default -> {
        return false;
      }
    }
    return true;
  }

  interface WithWorld {
    void run(MpiBuild mb) throws Exception;
  }

  static void withWorld(WithWorld body) throws Exception {
    try (MpiBuild mb = MpiBuild.create()) {
      body.run(mb);
    }
  }

  /** Opens an instance from {@code builder} (collective) and builds saxpy, reporting either failure. */
  static void opening(String name, int rank, org.mpibuild.MpiBuildBuilder builder) {
    long t0 = System.nanoTime();
    try (MpiBuild mb = builder.build()) {
      step(name, "1", mb, () -> mb.mpiBuildKernel(Saxpy.REQUEST, 0));
    } catch (RuntimeException e) {
      report(name, "1", rank, e.getClass().getSimpleName(), false, false, t0, e.getMessage());
    }
  }

  static void step(String name, String step, MpiBuild mb, Scenarios.Build build) {
    long t0 = System.nanoTime();
    try (Kernel k = build.call()) {
      boolean verified = Saxpy.runAndVerify(k.as(OpenClKernel.class), mb.rank(), 4096);
      report(name, step, mb.rank(), "ok", k.stats().compiled(), verified, t0, "bytes " + k.stats().binaryBytes());
    } catch (RuntimeException e) {
      report(name, step, mb.rank(), e.getClass().getSimpleName(), false, false, t0, e.getMessage());
    }
  }

  static void report(String name, String step, int rank, String outcome, boolean compiled, boolean verified, long t0,
      String message) {
    System.out.println("FAULT case=" + name + " step=" + step + " rank=" + rank + " outcome=" + outcome + " compiled="
        + compiled + " verified=" + verified + " ms=" + (System.nanoTime() - t0) / 1_000_000 + " message="
        + String.valueOf(message).replace("\r", "").replace("\n", " | "));
    System.out.flush();
  }

  /** This process's CPU time, every thread, in nanoseconds. */
  static long cpuNanos() {
    return ProcessHandle.current().info().totalCpuDuration().orElseThrow().toNanos();
  }

  static void killSelf() throws IOException, InterruptedException, MPIException {
    System.out.println("KILLING rank=" + MPI.COMM_WORLD.getRank() + " at=" + System.currentTimeMillis());
    System.out.flush();
    new ProcessBuilder("kill", "-KILL", Long.toString(ProcessHandle.current().pid())).start().waitFor();
    Thread.sleep(60_000);
  }

  static Path entries() {
    return Path.of(System.getenv("MPI_BUILD_CACHE_DIR"), "entries");
  }

  interface Mutation {
    byte[] apply(byte[] bytes);
  }

  /** Rank 0 rewrites the only cache entry on disk; then every rank moves on together. */
  static void changeEntry(int rank, Mutation m) throws IOException, MPIException, InterruptedException {
    if (rank == 0) {
      for (Path f : writtenEntries()) {
        Files.write(f, m.apply(Files.readAllBytes(f)));
      }
    }
    MPI.COMM_WORLD.barrier();
  }

  /**
   * The entries in the cache, once there is one: the library writes an entry on its own thread after
   * the build returns, so the first look may come before it (30 s at most, in 20 ms sleeps).
   */
  static List<Path> writtenEntries() throws IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (true) {
      try (var s = Files.list(entries())) {
        List<Path> written = s.filter(f -> f.getFileName().toString().endsWith(".kbin")).toList();
        if (!written.isEmpty() || System.nanoTime() > deadline) {
          return written;
        }
      }
      Thread.sleep(20);
    }
  }

  /** The lock text of a process of this host that has exited. */
  static String deadHolder() throws IOException, InterruptedException {
    Process p = new ProcessBuilder("true").start();
    p.waitFor();
    return "host=" + CacheAdmin.hostIdentity() + "\npid=" + p.pid() + "\nstart="
        + System.currentTimeMillis() + "\nacquired=" + System.currentTimeMillis() + "\n";
  }

  /** Rank 0 plants a lock file for saxpy's cache key, aged by {@code ageMillis}, before the job builds. */
  static void plantLock(int rank, String text, long ageMillis) throws Exception {
    if (rank == 0) {
      Backend b = Scenarios.openCl();
      String key;
      try {
        key = CacheAdmin.keyOf(Saxpy.REQUEST, b);
      } finally {
        b.close();
      }
      Path locks = Path.of(System.getenv("MPI_BUILD_CACHE_DIR"), "locks");
      Files.createDirectories(locks);
      Path lock = locks.resolve(key + ".lock");
      Files.writeString(lock, text);
      Files.setLastModifiedTime(lock, FileTime.fromMillis(System.currentTimeMillis() - ageMillis));
      System.out.println("PLANTED " + lock);
    }
    MPI.COMM_WORLD.barrier();
  }

  /** Binary data made locally by a backend that claims another id or target. */
  static BinaryData foreignBlob(String id, String target) {
    try (MpiBuild local = MpiBuild.builder().local().noCache().backend(new Retargeted(Scenarios.openCl(), id, target))
        .build(); Kernel k = local.mpiBuildKernel(Saxpy.REQUEST, 0)) {
      return BinaryData.fromBytes(k.binaryData().toBytes());
    }
  }

  /** A compiler that takes {@code millis} before it compiles; interrupted, it fails. */
  static final class Slow extends DelegatingBackend {
    private final long millis;

    Slow(Backend inner, long millis) {
      super(inner);
      this.millis = millis;
    }

    @Override
    public Compilation compile(KernelSource request) {
      System.out.println("COMPILING slowly for " + millis + " ms");
      System.out.flush();
      try {
        Thread.sleep(millis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted");
      }
      return inner.compile(request);
    }
  }

  /** A compiler that crashes. */
  static final class Crashing extends DelegatingBackend {
    Crashing(Backend inner) {
      super(inner);
    }

    @Override
    public Compilation compile(KernelSource request) {
      throw new InternalError("compiler crashed: SIGSEGV in code generation (simulated)");
    }
  }

  /** A compile during which the whole process is killed with SIGKILL. */
  static final class Killing extends DelegatingBackend {
    Killing(Backend inner) {
      super(inner);
    }

    @Override
    public Compilation compile(KernelSource request) {
      try {
        killSelf();
      } catch (IOException | InterruptedException | MPIException e) {
        throw new IllegalStateException(e);
      }
      throw new IllegalStateException("still alive after SIGKILL");
    }
  }

  /** A backend that claims another id or target. */
  static final class Retargeted extends DelegatingBackend {
    private final String id;
    private final String target;

    Retargeted(Backend inner, String id, String target) {
      super(inner);
      this.id = id;
      this.target = target;
    }

    @Override
    public String id() {
      return id;
    }

    @Override
    public String target() {
      return target == null ? inner.target() : target;
    }
  }
}
