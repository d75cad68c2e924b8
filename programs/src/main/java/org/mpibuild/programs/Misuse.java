package org.mpibuild.programs;

import static org.jocl.CL.CL_MEM_READ_WRITE;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clReleaseMemObject;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import mpi.MPI;
import org.jocl.cl_mem;
import org.mpibuild.Kernel;
import org.mpibuild.MpiBuild;
import org.mpibuild.examples.Saxpy;
import org.mpibuild.mpijava.MpiJava;
import org.mpibuild.opencl.OpenClKernel;
import org.mpibuild.opencl.QueueMessenger;
import org.mpibuild.spi.Communicator;

/**
 * Documented misuse on every rank of a real mpirun job, each step expected to throw a clear
 * {@code IllegalStateException} rather than crash the JVM, hang or corrupt another call:
 *
 * <p>usage: Misuse second-thread|after-close
 *
 * <ol>
 *   <li>{@code second-thread}: while a thread of rank 0 is inside {@code mpiBuildKernel} (rank 1 holds the
 *       collective back), a second thread of rank 0 calls {@code mpiBuildKernel}; the first call must then
 *       succeed on every rank, and its kernel run correctly;
 * </ol>
 *
 * <p>{@code after-close}, once the kernel is built and run:
 *
 * <ol>
 *   <li>{@code launch-after-close}: the MpiBuild is closed, then the kernel is launched through its handles
 *       ({@code Saxpy.runAndVerify}: context, kernel, queue);
 *   <li>{@code messenger-after-close}: a {@link QueueMessenger} opened on the kernel's queue sends after close;
 *   <li>{@code binary-after-close}: {@code Kernel.binaryData()} after close.
 * </ol>
 *
 * <p>Prints, per rank and step: {@code MISUSE rank=R step=S outcome=ok|refused|OTHER ms=T message=ONE-LINE},
 * and exits 0 when every step went as expected.
 */
public final class Misuse {
  private Misuse() {}

  public static void main(String[] args) throws Exception {
    MPI.InitThread(args, MPI.THREAD_MULTIPLE); // the messenger's progress thread calls MPI
    int rank = MPI.COMM_WORLD.getRank();
    boolean ok;
    try (Communicator comm = MpiJava.communicator(MPI.COMM_WORLD)) {
      ok = run(args[0], rank, comm);
    }
    int[] all = {ok ? 0 : 1};
    MPI.COMM_WORLD.allReduce(all, 1, MPI.INT, MPI.MAX);
    MPI.Finalize();
    System.exit(all[0]);
  }

  private static boolean run(String mode, int rank, Communicator comm) throws Exception {
    boolean secondThread = mode.equals("second-thread");
    boolean ok = true;
    MpiBuild mpiBuild = MpiBuild.builder().backend("opencl").build();
    Kernel kernel;
    if (secondThread && rank == 0) {
      ExecutorService first = Executors.newSingleThreadExecutor(r -> new Thread(r, "first-builder"));
      Future<Kernel> built = first.submit(() -> mpiBuild.mpiBuildKernel(Saxpy.REQUEST, 0));
      Thread.sleep(1_000); // rank 1 holds the build back for 3 s: the first thread is inside it now
      long t0 = System.nanoTime();
      Throwable refused = thrown(() -> mpiBuild.mpiBuildKernel(Saxpy.REQUEST, 0));
      long ms = (System.nanoTime() - t0) / 1_000_000;
      ok &= report(rank, "second-thread", refused, ms, "thread 'first-builder' is inside MpiBuild.mpiBuildKernel");
      kernel = built.get(120, TimeUnit.SECONDS);
      first.shutdown();
    } else {
      if (secondThread && rank == 1) {
        Thread.sleep(3_000);
      }
      kernel = mpiBuild.mpiBuildKernel(Saxpy.REQUEST, 0);
    }
    OpenClKernel ocl = kernel.as(OpenClKernel.class);
    boolean verified = Saxpy.runAndVerify(ocl, rank, 1000);
    ok &= verified;
    System.out.println("MISUSE rank=" + rank + " step=first-call outcome=" + (verified ? "ok" : "wrong") + " ms=0"
        + " message=verified=" + verified);
    if (secondThread) {
      kernel.close();
      mpiBuild.close();
      return ok;
    }
    cl_mem buffer = clCreateBuffer(ocl.context(), CL_MEM_READ_WRITE, 4096, null, null);
    QueueMessenger messenger = QueueMessenger.open(comm, ocl.queue());
    mpiBuild.close();

    long t0 = System.nanoTime();
    Throwable launch = thrown(() -> Saxpy.runAndVerify(ocl, rank, 1000));
    ok &= report(rank, "launch-after-close", launch, (System.nanoTime() - t0) / 1_000_000,
        "kernel saxpy: its MpiBuild was closed");
    Throwable send = thrown(() -> messenger.sendAfter(buffer, 4096, (rank + 1) % comm.size(), 0));
    ok &= report(rank, "messenger-after-close", send, 0, ": its MpiBuild was closed");
    Throwable binary = thrown(kernel::binaryData);
    ok &= report(rank, "binary-after-close", binary, 0, "kernel saxpy: its MpiBuild was closed");
    kernel.close();
    messenger.close();
    clReleaseMemObject(buffer);
    return ok;
  }

  private interface Call {
    Object run() throws Exception;
  }

  private static Throwable thrown(Call call) {
    try {
      call.run();
      return null;
    } catch (Throwable e) {
      return e;
    }
  }

  /** Prints the step; returns whether it threw an IllegalStateException whose message holds {@code expected}. */
  private static boolean report(int rank, String step, Throwable t, long ms, String expected) {
    boolean refused = t instanceof IllegalStateException && t.getMessage() != null && t.getMessage().contains(expected);
    String outcome = refused ? "refused" : t == null ? "no-exception" : t.getClass().getSimpleName();
    String message = t == null ? "" : String.valueOf(t.getMessage()).replace('\n', ' ');
    System.out.println("MISUSE rank=" + rank + " step=" + step + " outcome=" + outcome + " ms=" + ms + " message="
        + message);
    return refused;
  }
}
