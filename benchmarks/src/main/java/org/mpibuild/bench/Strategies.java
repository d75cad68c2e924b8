package org.mpibuild.bench;

import java.nio.ByteBuffer;
import java.nio.LongBuffer;
import java.nio.file.Path;
import java.time.Duration;
import mpi.MPI;
import org.jocl.cl_program;
import org.mpibuild.BuildStats;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.opencl.OpenClKernel;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Compilation;
import org.mpibuild.spi.LoadedProgram;

/**
 * The strategies of a {@link Bench} job that use no shared file: naive (every rank compiles), mpi-build, and the
 * physical finished-code limit. OCCA's file-based caches are {@link OccaCaches}.
 */
final class Strategies {
  private Strategies() {}

  /** Every rank: its own context, the compile from source, the first launches. No binary is read. */
  static Bench.Cell naive(KernelSource request, String program) throws Exception {
    return Bench.timed(r -> {
      Ocl cl = Ocl.open();
      r.closers.add(cl);
      r.lap(Phases.SETUP);
      cl_program p = cl.build(request.source(), request.options());
      r.compileNanos = r.lap(Phases.COMPILE);
      r.compiles = 1;
      Launch.everyKernel(cl, cl.kernels(p, request.kernelNames()), program);
      r.lap(Phases.LAUNCH);
    });
  }

  /**
   * mpi-build: the context ({@code MpiBuild.builder()...build()}, with a backend of its own) is created inside
   * the timed region; the root compiles (or finds the binary in the cache) and broadcasts it. Its phases
   * come from the kernel's {@link BuildStats}: agreement (set-up), obtain (the root's compile, code
   * generation included: not split), wait, broadcast, load; the first launches are timed here.
   */
  static Bench.Cell collective(KernelSource request, Path cacheDir, int size, String program) throws Exception {
    return Bench.timed(r -> {
      MpiBuild mb = MpiBuild.builder().backend(org.mpibuild.programs.Scenarios.openCl()).cacheDirectory(cacheDir)
          .compileTimeout(Duration.ofMinutes(30)).build();
      r.closers.add(mb);
      r.lap(Phases.SETUP);
      Kernel k = mb.mpiBuildKernel(request, 0);
      r.closers.add(k);
      long call = System.nanoTime();
      BuildStats s = k.stats();
      r.phases[Phases.SETUP] += s.agreementNanos();
      r.phases[Phases.COMPILE] += s.obtainNanos();
      r.phases[Phases.WAIT] += s.waitNanos();
      r.phases[Phases.BROADCAST] += s.broadcastNanos();
      r.phases[Phases.LOAD] += s.loadNanos();
      r.mark = call; // what the call spent outside its phases stays "other"
      r.compiles = s.compiled() ? 1 : 0;
      r.compileNanos = s.compiled() ? s.obtainNanos() : 0;
      r.fsops = s.cacheFileOperations();
      r.binaryBytes = s.binaryBytes();
      r.bytes = s.rank() == s.root() ? s.binaryBytes() * (size - 1) : 0;
      r.receiver = s.rank() != s.root();
      Launch.everyKernel(k.as(OpenClKernel.class), program);
      r.lap(Phases.LAUNCH);
    });
  }

  /**
   * The physical finished-code limit: what the root cannot do with less, the rest as bare as MPI allows. Rank 0
   * builds the request in its own process and launches every kernel once at its named shape, which generates
   * exactly the named work-group functions (a naive rank's compile and first launches: the front end and the
   * named specializations); then a raw MPI broadcast of the finished binary's bytes, a load and the first
   * launches on every other rank. The finished binary itself is made in between by {@code Backend.compile} and
   * <b>not timed</b> (its wall time is taken off every rank's time and its CPU off the root's): PoCL puts
   * specialized functions into a binary only in a process whose environment names them, and forces a generic
   * function per kernel at the binary query, so no process can make this binary in the time measured. What the
   * limit omits, and mpi-build pays: that compile process's start, PoCL's start-up in it, the stand-ins that
   * keep PoCL from generating the generic functions (see PoclSpecialization), the agreement, the envelope and its
   * checksums, and the cache. A receiver waits for the root politely ({@link Bench#awaitPolitely}).
   */
  static Bench.Cell limitFinished(KernelSource request, int rank, int size, String program) throws Exception {
    return Bench.timed(r -> {
      Backend b = org.mpibuild.programs.Scenarios.openCl();
      r.closers.add(b::close);
      r.lap(Phases.SETUP);
      long[] excluded = {0, 0}; // the untimed compile's wall and CPU nanoseconds, on the root
      byte[] binary = rank == 0 ? rootBuildsAndMakes(r, b, request, program, excluded) : null;
      LongBuffer head = MPI.newLongBuffer(2);
      if (rank == 0) {
        head.put(0, binary.length).put(1, excluded[0]);
      }
      Bench.awaitPolitely(MPI.COMM_WORLD.iBcast(head, 2, MPI.LONG, 0));
      int len = (int) head.get(0);
      if (rank != 0) {
        r.mark += head.get(1); // the untimed compile, out of this rank's wait
      }
      r.excludedNanos = head.get(1);
      r.excludedCpuNanos = excluded[1];
      r.lap(Phases.WAIT);
      ByteBuffer buf = ByteBuffer.allocateDirect(len);
      if (rank == 0) {
        buf.put(binary).flip();
      }
      MPI.COMM_WORLD.bcast(buf, len, MPI.BYTE, 0);
      byte[] mine = new byte[len];
      if (rank != 0) {
        buf.get(mine);
      }
      r.lap(Phases.BROADCAST);
      if (rank != 0) {
        LoadedProgram loaded = b.load(mine, request.kernelNames());
        r.closers.add(loaded);
        r.lap(Phases.LOAD);
        r.receiver = true;
        Launch.everyKernel(loaded, program);
        r.lap(Phases.LAUNCH);
      }
      r.bytes = rank == 0 ? (long) len * (size - 1) : 0;
      r.binaryBytes = len;
    });
  }

  /**
   * The root's share of the limit: its front end and first launches, timed; then the finished binary, made by
   * {@code Backend.compile} and not timed ({@code excluded} gets its wall and CPU nanoseconds).
   */
  private static byte[] rootBuildsAndMakes(Bench.Run r, Backend b, KernelSource request, String program,
      long[] excluded) throws Exception {
    Ocl cl = Ocl.open();
    r.closers.add(cl);
    cl_program p = cl.build(request.source(), request.options());
    r.compileNanos = r.lap(Phases.COMPILE);
    r.compiles = 1;
    Launch.everyKernel(cl, cl.kernels(p, request.kernelNames()), program);
    r.lap(Phases.LAUNCH);
    long t0 = System.nanoTime();
    long cpu0 = Cpu.nanos();
    Compilation c = b.compile(request);
    c.program().close();
    byte[] binary = c.binary();
    excluded[1] = Cpu.nanos() - cpu0;
    excluded[0] = System.nanoTime() - t0;
    r.mark += excluded[0];
    return binary;
  }
}
