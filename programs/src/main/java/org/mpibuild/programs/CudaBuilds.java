package org.mpibuild.programs;

import java.util.Arrays;
import java.util.HexFormat;
import org.mpibuild.BinaryData;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.cuda.CudaKernel;
import org.mpibuild.examples.CudaSaxpy;

/**
 * CUDA builds under mpirun or mpiexec (or plain java), for CI without a GPU and for the GPU check. Every rank prints
 * one line per step:
 *
 * <pre>CUDA step=NAME rank=R outcome=ok|EXCEPTION target=T magic=HEX verified=B message=ONE-LINE</pre>
 *
 * Steps: {@code cubin} and {@code fatbin} (binaries for architectures named explicitly, no GPU needed),
 * {@code compile-error}, {@code driver} (the backend for this node's own GPUs), and {@code run} (build
 * for this job's GPUs, load, run saxpy, check the numbers), which needs a GPU.
 */
public final class CudaBuilds {
  private CudaBuilds() {}

  public static void main(String[] args) {
    String archs = args.length > 0 ? args[0] : "sm_80,sm_90";
    String one = archs.split(",")[0];
    binary("cubin", one, CudaSaxpy.REQUEST);
    binary("fatbin", archs, CudaSaxpy.REQUEST);
    binary("compile-error", one, KernelSource.of("extern \"C\" __global__ void k(float* y) { y[0] = undeclared_value; }")
        .withKernels("k"));
    // Without MPI_BUILD_CUDA_ARCH: the job's own GPUs.
    System.clearProperty("mpibuild.cuda.arch");
    long t0 = System.nanoTime();
    try (MpiBuild mb = MpiBuild.builder().backend("cuda").build()) {
      print("driver", mb.rank(), "ok", mb.target(), "", false, "usable GPU");
      try (Kernel k = mb.mpiBuildKernel(CudaSaxpy.REQUEST, 0)) {
        boolean ok = CudaSaxpy.runAndVerify(k.as(CudaKernel.class), mb.rank(), 1 << 16);
        print("run", mb.rank(), "ok", k.target(), "", ok, "compiled=" + k.stats().compiled() + " ms="
            + (System.nanoTime() - t0) / 1_000_000);
      } catch (RuntimeException e) {
        print("run", mb.rank(), e.getClass().getSimpleName(), "", "", false, e.getMessage());
      }
    } catch (RuntimeException e) {
      print("driver", rankFromEnv(), e.getClass().getSimpleName(), "", "", false, e.getMessage());
    }
  }

  static void binary(String step, String archs, KernelSource request) {
    System.setProperty("mpibuild.cuda.arch", archs);
    try (MpiBuild mb = MpiBuild.builder().backend("cuda").build()) {
      try {
        BinaryData data = mb.mpiBuildBinary(request, 0);
        byte[] b = data.toBytes();
        byte[] head = Arrays.copyOfRange(b, b.length - (int) data.binaryLength(),
            b.length - (int) data.binaryLength() + 4);
        print(step, mb.rank(), "ok", data.target(), HexFormat.of().formatHex(head), false, data.compiler());
      } catch (RuntimeException e) {
        print(step, mb.rank(), e.getClass().getSimpleName(), "", "", false, e.getMessage());
      }
    } finally {
      System.clearProperty("mpibuild.cuda.arch");
    }
  }

  static void print(String step, int rank, String outcome, String target, String magic, boolean verified, String message) {
    System.out.println("CUDA step=" + step + " rank=" + rank + " outcome=" + outcome + " target=" + target + " magic="
        + magic + " verified=" + verified + " message=" + String.valueOf(message).replace("\n", " | "));
    System.out.flush();
  }

  /** The rank its launcher gave this process: Open MPI's mpirun, or MPICH's Hydra (the GPU bundle's); else 0. */
  static int rankFromEnv() {
    String r = System.getenv("OMPI_COMM_WORLD_RANK");
    if (r == null) {
      r = System.getenv("PMI_RANK");
    }
    return r == null ? 0 : Integer.parseInt(r);
  }
}
