package org.mpibuild.programs;

import static org.jocl.CL.CL_MEM_COPY_HOST_PTR;
import static org.jocl.CL.CL_MEM_READ_ONLY;
import static org.jocl.CL.CL_MEM_WRITE_ONLY;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.CL_TRUE;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clEnqueueNDRangeKernel;
import static org.jocl.CL.clEnqueueReadBuffer;
import static org.jocl.CL.clFinish;
import static org.jocl.CL.clReleaseMemObject;
import static org.jocl.CL.clSetKernelArg;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.mpibuild.Kernel;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;
import org.mpibuild.MpiBuild;
import org.mpibuild.opencl.OpenClKernel;

/**
 * Ready means ready: every rank builds two tiled matrix kernels collectively, then launches each once at its
 * shape and reports the work-group functions its PoCL cache ({@code POCL_CACHE_DIR}, private to the rank
 * under {@code bin/mpi-build-rank}) gained during that launch. With {@code shapes}, the request names both
 * launch shapes, and no rank may gain one; with {@code none}, every rank generates them at its first launch;
 * with {@code some}, only {@code mm8}'s shape is named, so the binary holds no code for {@code mm16} and every
 * rank generates that one (from the program's bitcode) and computes right with it.
 *
 * <p>Prints, per rank: {@code FINISHED rank=R mode=M loadMs=L launchMs=F verified=V generated=[...]}.
 *
 * <p>usage: FinishedCode shapes|some|none
 */
public final class FinishedCode {
  /** The matrix order: 4 x 4 work-groups of the larger tile. */
  static final int N = 64;
  static final int[] TILES = {8, 16};

  private FinishedCode() {}

  /** Two kernels, {@code mm8} and {@code mm16}, each a tiled multiply C = A B with its own tile. */
  public static String source() {
    StringBuilder sb = new StringBuilder();
    for (int t : TILES) {
      sb.append(TiledMatmul.plain("mm" + t, t));
    }
    return sb.toString();
  }

  /** The request, with the launch shapes of the first {@code named} tiles. */
  public static KernelSource request(int named) {
    KernelSource r = KernelSource.of(source()).withKernels("mm8", "mm16");
    if (named == 0) {
      return r;
    }
    List<LaunchShape> shapes = new ArrayList<>();
    for (int i = 0; i < named; i++) {
      shapes.add(LaunchShape.of("mm" + TILES[i], TILES[i], TILES[i]).withGlobalSize(N, N));
    }
    return r.withLaunchShapes(shapes);
  }

  public static void main(String[] args) {
    String mode = args.length > 0 ? args[0] : "none";
    int named = switch (mode) {
      case "shapes" -> TILES.length;
      case "some" -> 1;
      case "none" -> 0;
      default -> throw new IllegalArgumentException("usage: FinishedCode shapes|some|none, not '" + mode + "'");
    };
    Path pocl = Path.of(System.getenv().getOrDefault("POCL_CACHE_DIR", System.getProperty("user.home") + "/.cache/pocl"));
    try (MpiBuild mpi = MpiBuild.create(); Kernel built = mpi.mpiBuildKernel(request(named), 0)) {
      OpenClKernel k = built.as(OpenClKernel.class);
      TreeSet<String> before = workGroupFunctions(pocl);
      long t0 = System.nanoTime();
      boolean verified = launchAll(k);
      long launchNanos = System.nanoTime() - t0;
      TreeSet<String> generated = workGroupFunctions(pocl);
      generated.removeAll(before);
      // One line in one write, so that the launcher never interleaves two ranks' lines (printf wrote in pieces,
      // and Open MPI 5 mixed them).
      System.out.println(String.format(java.util.Locale.ROOT,
          "FINISHED rank=%d mode=%s loadMs=%.1f launchMs=%.1f verified=%b generated=%s", mpi.rank(), mode,
          built.stats().loadNanos() / 1e6, launchNanos / 1e6, verified, generated));
    }
  }

  /**
   * The work-group functions in a PoCL cache: the directories that hold a kernel's machine code, named by
   * their specialization ({@code 16-16-1-goffs0-smallgrid}, {@code 0-0-0} for the generic one), as paths
   * from the kernel's directory ({@code mm16/16-16-1-goffs0-smallgrid}).
   */
  public static TreeSet<String> workGroupFunctions(Path cache) {
    TreeSet<String> out = new TreeSet<>();
    if (!Files.isDirectory(cache)) {
      return out;
    }
    try (Stream<Path> files = Files.walk(cache)) {
      files.filter(f -> f.getFileName().toString().endsWith(".so"))
          .map(Path::getParent)
          .filter(d -> d.getFileName().toString().matches("\\d+-\\d+-\\d+.*"))
          .forEach(d -> out.add(d.getParent().getFileName() + "/" + d.getFileName()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  /** Launches each kernel at its shape on A = B = identity-plus-one and checks C against the host. */
  static boolean launchAll(OpenClKernel k) {
    float[] a = new float[N * N];
    for (int i = 0; i < a.length; i++) {
      a[i] = (i % 7) - 3;
    }
    float[] expected = new float[N * N];
    for (int r = 0; r < N; r++) {
      for (int c = 0; c < N; c++) {
        float s = 0;
        for (int i = 0; i < N; i++) {
          s += a[r * N + i] * a[i * N + c];
        }
        expected[r * N + c] = s;
      }
    }
    int[] err = new int[1];
    long bytes = (long) Sizeof.cl_float * N * N;
    cl_mem in = clCreateBuffer(k.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, Pointer.to(a), err);
    cl_mem out = clCreateBuffer(k.context(), CL_MEM_WRITE_ONLY, bytes, null, err);
    boolean ok = true;
    try {
      for (int t : TILES) {
        cl_kernel kernel = k.kernel("mm" + t);
        clSetKernelArg(kernel, 0, Sizeof.cl_int, Pointer.to(new int[] {N}));
        clSetKernelArg(kernel, 1, Sizeof.cl_mem, Pointer.to(in));
        clSetKernelArg(kernel, 2, Sizeof.cl_mem, Pointer.to(in));
        clSetKernelArg(kernel, 3, Sizeof.cl_mem, Pointer.to(out));
        check(clEnqueueNDRangeKernel(k.queue(), kernel, 2, null, new long[] {N, N}, new long[] {t, t}, 0, null, null),
            "launch mm" + t);
        float[] c = new float[N * N];
        check(clEnqueueReadBuffer(k.queue(), out, CL_TRUE, 0, bytes, Pointer.to(c), 0, null, null), "read");
        for (int i = 0; i < c.length; i++) {
          ok &= Math.abs(c[i] - expected[i]) < 1e-3f;
        }
      }
      check(clFinish(k.queue()), "clFinish");
    } finally {
      clReleaseMemObject(in);
      clReleaseMemObject(out);
    }
    return ok;
  }

  private static void check(int rc, String what) {
    if (rc != CL_SUCCESS) {
      throw new IllegalStateException(what + ": " + CL.stringFor_errorCode(rc));
    }
  }
}
