package org.mpibuild.programs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.ServiceLoader;
import java.util.stream.Stream;
import mpi.Intracomm;
import mpi.MPI;
import mpi.MPIException;
import org.mpibuild.CompileException;
import org.mpibuild.Kernel;
import org.mpibuild.KernelLoadException;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.RequestMismatchException;
import org.mpibuild.examples.Saxpy;
import org.mpibuild.mpijava.MpiJava;
import org.mpibuild.opencl.OpenClKernel;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.BackendProvider;
import org.mpibuild.spi.LoadedProgram;
import org.mpibuild.testkit.DelegatingBackend;

/**
 * The program that the mpirun-launched integration tests run. It does not initialize MPI: the library
 * does, and finalizes it when the last MpiBuild is closed. Every scenario is a collective call made by
 * every rank; each rank prints one line per scenario:
 *
 * <pre>RESULT scenario=NAME rank=R size=N outcome=ok|EXCEPTION compiled=B hit=B verified=B message=ONE-LINE</pre>
 *
 * Scenarios that need more than one rank are not run on one rank.
 */
public final class Scenarios {
  static final String BROKEN = "__kernel void broken(__global float* y) { y[0] = undeclared_value; }";

  private Scenarios() {}

  public static void main(String[] args) throws MPIException {
    try (MpiBuild world = MpiBuild.create()) {
      int rank = world.rank();
      int size = world.size();

      // 1. Success, root on the last rank.
      run("success", world, () -> world.mpiBuildKernel(Saxpy.REQUEST, size - 1));
      // 2. Compile failure: every rank gets the compiler's log.
      run("compile-failure", world, () -> world.mpiBuildKernel(BROKEN, 0));
      // 3. An invalid root: IllegalArgumentException everywhere, no MPI call made with it.
      run("invalid-root", world, () -> world.mpiBuildKernel(Saxpy.REQUEST, size));
      // 4. Bad input: an unknown kernel name.
      run("unknown-kernel", world, () -> world.mpiBuildKernel(Saxpy.REQUEST.withKernels("nope"), 0));
      if (size > 1) {
        // 5. The last rank asks for different options.
        KernelSource mine = rank == size - 1 ? Saxpy.REQUEST.withOptions("-cl-fast-relaxed-math") : Saxpy.REQUEST;
        run("mismatch", world, () -> world.mpiBuildKernel(mine, 0));
        // 6. Rank 1 cannot load the binary (its device refuses it).
        try (MpiBuild faulty = MpiBuild.builder().backend(rank == 1 ? new RefusingBackend(openCl()) : openCl()).build()) {
          run("load-failure", faulty, () -> faulty.mpiBuildKernel(Saxpy.REQUEST, 0));
        }
        // 7. A communicator of the caller: even and odd ranks build separately, each from its rank 0.
        Intracomm half = MPI.COMM_WORLD.split(rank % 2, rank);
        try (MpiBuild sub = MpiBuild.builder().communicator(MpiJava.communicator(half)).build()) {
          run("sub-communicator", sub, () -> sub.mpiBuildKernel(Saxpy.REQUEST, 0));
        } finally {
          half.free();
        }
      }
      // 8. A node-local cache (MPI_Comm_split_type SHARED picks one writer per node).
      String shared = System.getenv("MPI_BUILD_CACHE_DIR");
      if (shared != null) {
        System.setProperty("mpibuild.cache.nodeDir", shared + "-node");
        try (MpiBuild node = MpiBuild.create()) {
          run("node-cache", node, () -> node.mpiBuildKernel(Saxpy.REQUEST, 0));
        } finally {
          System.clearProperty("mpibuild.cache.nodeDir");
        }
        if (rank == 0) {
          System.out.println("NODE-CACHE entries=" + countEntries(Path.of(shared + "-node", "entries")));
        }
      }
      // 9. Chunked transfer: a tiny chunk size forces many broadcasts of one binary.
      try (MpiBuild chunked = MpiBuild.builder().chunkBytes(1000).build()) {
        run("chunked", chunked, () -> chunked.mpiBuildKernel(Saxpy.REQUEST, 0));
      }
    }
  }

  static long countEntries(Path dir) {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.toString().endsWith(".kbin")).count();
    } catch (IOException e) {
      return -1;
    }
  }

  interface Build {
    Kernel call();
  }

  static void run(String scenario, MpiBuild mb, Build build) {
    String outcome;
    boolean compiled = false;
    boolean hit = false;
    boolean verified = false;
    String message = "";
    try (Kernel k = build.call()) {
      outcome = "ok";
      compiled = k.stats().compiled();
      hit = k.stats().cacheHit();
      verified = Saxpy.runAndVerify(k.as(OpenClKernel.class), mb.rank(), 4096);
      message = "bytes " + k.stats().binaryBytes();
    } catch (CompileException | RequestMismatchException | KernelLoadException | IllegalArgumentException e) {
      outcome = e.getClass().getSimpleName();
      message = e.getMessage();
    }
    System.out.println("RESULT scenario=" + scenario + " rank=" + mb.rank() + " size=" + mb.size()
        + " outcome=" + outcome + " compiled=" + compiled + " hit=" + hit + " verified=" + verified + " message="
        + message.replace("\r", "").replace("\n", " | "));
    System.out.flush();
  }

  public static Backend openCl() {
    for (BackendProvider p : ServiceLoader.load(BackendProvider.class)) {
      if (p.id().equals("opencl")) {
        return p.open(org.mpibuild.spi.SettingSource.ofProcess());
      }
    }
    throw new IllegalStateException("the OpenCL backend is not on the class path");
  }

  /** The real OpenCL backend, except that loading gets a binary whose bytes were zeroed. */
  static final class RefusingBackend extends DelegatingBackend {
    RefusingBackend(Backend inner) {
      super(inner);
    }

    @Override
    public LoadedProgram load(byte[] binary, List<String> kernelNames) {
      return inner.load(new byte[binary.length], kernelNames);
    }
  }
}
