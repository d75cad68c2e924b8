package org.mpibuild.examples.cg;

import static org.jocl.CL.CL_MEM_COPY_HOST_PTR;
import static org.jocl.CL.CL_MEM_READ_WRITE;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.CL_TRUE;
import static org.jocl.CL.clCreateBuffer;
import static org.jocl.CL.clEnqueueCopyBuffer;
import static org.jocl.CL.clEnqueueFillBuffer;
import static org.jocl.CL.clEnqueueNDRangeKernel;
import static org.jocl.CL.clEnqueueReadBuffer;
import static org.jocl.CL.clFinish;
import static org.jocl.CL.clReleaseMemObject;
import static org.jocl.CL.clSetKernelArg;

import java.util.ArrayList;
import java.util.List;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_kernel;
import org.jocl.cl_mem;
import org.mpibuild.opencl.OpenClKernel;

/**
 * One rank's share of the conjugate gradient solver on an OpenCL device: its rows of x, r, p and Ap on the
 * device, the kernels of {@link CgKernels}, and the order in which an iteration enqueues them and communicates
 * ({@link Exchange}). Every scalar of the algorithm stays on the device: {@code p·Ap} and {@code r·r} are summed
 * over ranks in one-double buffers that the next kernels read, {@code r·r} alternates between two buffers (the
 * old one is needed for {@code beta}), and each iteration's {@code r·r} is copied into a history buffer that the
 * host reads at the end. The host reads {@code r·r} itself only at the iterations {@link Stopping} checks.
 */
final class OpenClCg implements AutoCloseable {
  /** Ways to break the solver on purpose, to show that the tests notice. */
  enum Fault {
    /** none */
    NONE,
    /** {@code x} and {@code r} are updated with this rank's own {@code p·Ap}, before its sum over ranks */
    SUM_LATE
  }

  private final OpenClKernel k;
  private final cl_command_queue queue;
  private final int nx;
  private final int rows;
  private final int count;
  private final long rowBytes;
  private final long[] tiles;
  private final long[] tile = {CgKernels.TILE_X, CgKernels.TILE_Y};
  private final int groups;
  private final List<cl_mem> buffers = new ArrayList<>();
  private final cl_mem x;
  private final cl_mem r;
  private final cl_mem p;
  private final cl_mem ap;
  private final cl_mem above;
  private final cl_mem below;
  private final cl_mem lastRow;
  private final cl_mem partial;
  private final cl_mem pap;
  /** {@code r·r} of the even and odd iterations. */
  private final cl_mem[] rr = new cl_mem[2];
  private final cl_mem history;
  private final Exchange.Halo halo;

  /**
   * Allocates this rank's buffers: x = 0, r = p = b on its rows, zero halos (the domain's edge stays zero).
   *
   * @param k the built kernels and their queue
   * @param problem the grid
   * @param blocks the split of its rows
   * @param rank this rank
   * @param maxIterations the most iterations, for the history's size
   */
  OpenClCg(OpenClKernel k, Poisson problem, RowBlocks blocks, int rank, int maxIterations) {
    this.k = k;
    this.queue = k.queue();
    this.nx = problem.nx();
    this.rows = blocks.count(rank);
    this.count = nx * rows;
    this.rowBytes = (long) nx * Sizeof.cl_double;
    this.tiles = new long[] {CgKernels.roundUp(nx, CgKernels.TILE_X), CgKernels.roundUp(rows, CgKernels.TILE_Y)};
    this.groups = CgKernels.dotGroups(count);
    long bytes = (long) count * Sizeof.cl_double;
    double[] b = problem.rhsRows(blocks.first(rank), rows);
    x = zeros(bytes);
    r = buffer(bytes, b);
    p = buffer(bytes, b);
    ap = zeros(bytes);
    above = zeros(rowBytes);
    below = zeros(rowBytes);
    lastRow = zeros(rowBytes);
    partial = zeros((long) groups * Sizeof.cl_double);
    pap = zeros(Sizeof.cl_double);
    rr[0] = zeros(Sizeof.cl_double);
    rr[1] = zeros(Sizeof.cl_double);
    history = zeros((long) (maxIterations + 1) * Sizeof.cl_double);
    halo = new Exchange.Halo(p, lastRow, above, below, rowBytes, rank > 0 ? rank - 1 : -1,
        rank < blocks.ranks() - 1 ? rank + 1 : -1);
    check(clFinish(queue));
  }

  /** Enqueues {@code r·r} of the start (every rank's sum) into the history's first place. */
  void start(Exchange exchange) {
    dot(r, r, rr[0]);
    exchange.sum(rr[0]);
    record(0);
  }

  /**
   * Enqueues iteration {@code it} (counted from 1): the halo exchange of p, {@code Ap}, the sum of {@code p·Ap},
   * the update of x and r, the sum of {@code r·r}, its copy into the history, and the update of p.
   *
   * @param it the iteration
   * @param exchange how ranks communicate
   * @param fault a deliberate mistake, or {@link Fault#NONE}
   */
  void iteration(int it, Exchange exchange, Fault fault) {
    cl_mem rrOld = rr[(it - 1) & 1];
    cl_mem rrNew = rr[it & 1];
    if (halo.down() >= 0) {
      check(clEnqueueCopyBuffer(queue, p, lastRow, (long) (rows - 1) * rowBytes, 0, rowBytes, 0, null, null));
    }
    exchange.halo(halo);
    launch("stencil", tiles, tile, p, above, below, ap, nx, rows);
    dot(p, ap, pap);
    if (fault == Fault.SUM_LATE) {
      launch("update_xr", tiles, tile, x, r, p, ap, rrOld, pap, nx, rows);
      exchange.sum(pap);
    } else {
      exchange.sum(pap);
      launch("update_xr", tiles, tile, x, r, p, ap, rrOld, pap, nx, rows);
    }
    dot(r, r, rrNew);
    exchange.sum(rrNew);
    record(it);
    launch("update_p", tiles, tile, p, r, rrNew, rrOld, nx, rows);
  }

  /**
   * Reads {@code r·r} after iteration {@code it} (0: the start): waits for the queue up to there.
   *
   * @param it the iteration
   * @return every rank's {@code r·r}
   */
  double readRr(int it) {
    double[] out = new double[1];
    check(clEnqueueReadBuffer(queue, rr[it & 1], CL_TRUE, 0, Sizeof.cl_double, Pointer.to(out), 0, null, null));
    return out[0];
  }

  /** @return {@code r·r} at the start and after each of {@code iterations} iterations */
  double[] history(int iterations) {
    double[] out = new double[iterations + 1];
    check(clEnqueueReadBuffer(queue, history, CL_TRUE, 0, (long) out.length * Sizeof.cl_double, Pointer.to(out), 0,
        null, null));
    return out;
  }

  /** @return this rank's rows of x */
  double[] x() {
    double[] out = new double[count];
    check(clEnqueueReadBuffer(queue, x, CL_TRUE, 0, (long) count * Sizeof.cl_double, Pointer.to(out), 0, null,
        null));
    return out;
  }

  /** {@code into[0] = a·b} on this rank's rows: partial sums per work-group, then their sum. */
  private void dot(cl_mem a, cl_mem b, cl_mem into) {
    launch("partial_dot", new long[] {(long) groups * CgKernels.GROUP}, new long[] {CgKernels.GROUP}, a, b, partial, count);
    launch("sum_partials", new long[] {CgKernels.GROUP}, new long[] {CgKernels.GROUP}, partial, groups, into);
  }

  private void record(int it) {
    check(clEnqueueCopyBuffer(queue, rr[it & 1], history, 0, (long) it * Sizeof.cl_double, Sizeof.cl_double, 0,
        null, null));
  }

  /** Sets the arguments of {@code name} (buffers and ints) and enqueues it. */
  private void launch(String name, long[] global, long[] local, Object... args) {
    cl_kernel kernel = k.kernel(name);
    for (int i = 0; i < args.length; i++) {
      if (args[i] instanceof cl_mem m) {
        check(clSetKernelArg(kernel, i, Sizeof.cl_mem, Pointer.to(m)));
      } else {
        check(clSetKernelArg(kernel, i, Sizeof.cl_int, Pointer.to(new int[] {(Integer) args[i]})));
      }
    }
    check(clEnqueueNDRangeKernel(queue, kernel, global.length, null, global, local, 0, null, null));
  }

  private cl_mem zeros(long bytes) {
    cl_mem m = buffer(bytes, null);
    check(clEnqueueFillBuffer(queue, m, Pointer.to(new double[] {0}), Sizeof.cl_double, 0, bytes, 0, null, null));
    return m;
  }

  private cl_mem buffer(long bytes, double[] init) {
    int[] err = new int[1];
    cl_mem m = clCreateBuffer(k.context(), CL_MEM_READ_WRITE | (init != null ? CL_MEM_COPY_HOST_PTR : 0), bytes,
        init != null ? Pointer.to(init) : null, err);
    check(err[0]);
    buffers.add(m);
    return m;
  }

  /** Releases the buffers; the queue must have finished with them. */
  @Override
  public void close() {
    clFinish(queue);
    buffers.forEach(m -> clReleaseMemObject(m));
    buffers.clear();
  }

  /** Throws, naming the error, unless {@code rc} is {@code CL_SUCCESS}. */
  static void check(int rc) {
    if (rc != CL_SUCCESS) {
      throw new IllegalStateException(CL.stringFor_errorCode(rc));
    }
  }
}
