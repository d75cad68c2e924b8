package org.mpibuild.examples.cg;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * One rank's share of the conjugate gradient solver, on any device ({@link CgDevice}): its rows of x, r, p and Ap
 * on the device, the kernels of {@link CgKernels}, and the order in which an iteration enqueues them and
 * communicates ({@link Exchange}). Every scalar of the algorithm stays on the device: {@code p·Ap} and {@code r·r}
 * are summed over ranks in one-double buffers that the next kernels read, {@code r·r} alternates between two
 * buffers (the old one is needed for {@code beta}), and each iteration's {@code r·r} is copied into a history
 * buffer that the host reads at the end. The host reads {@code r·r} itself only at the iterations {@link Stopping}
 * checks.
 *
 * @param <B> a device buffer
 */
final class CgSolver<B> implements AutoCloseable {
  /** Ways to break the solver on purpose, to show that the tests notice. */
  enum Fault {
    /** none */
    NONE,
    /** {@code x} and {@code r} are updated with this rank's own {@code p·Ap}, before its sum over ranks */
    SUM_LATE
  }

  private static final int[] TILE = {CgKernels.TILE_X, CgKernels.TILE_Y};
  private static final int[] GROUP = {CgKernels.GROUP};

  private final CgDevice<B> device;
  private final int nx;
  private final int rows;
  private final int count;
  private final long rowBytes;
  private final int[] points;
  private final int groups;
  private final List<B> buffers = new ArrayList<>();
  private final B x;
  private final B r;
  private final B p;
  private final B ap;
  private final B lastRow;
  private final B partial;
  private final B pap;
  /** {@code r·r} of the even and odd iterations. */
  private final List<B> rr = new ArrayList<>(2);
  private final B history;
  private final Exchange.Halo<B> halo;

  /**
   * Allocates this rank's buffers: x = 0, r = p = b on its rows, zero halos (the domain's edge stays zero).
   *
   * @param device the device, with the kernels built
   * @param problem the grid
   * @param blocks the split of its rows
   * @param rank this rank
   * @param maxIterations the most iterations, for the history's size
   */
  CgSolver(CgDevice<B> device, Poisson problem, RowBlocks blocks, int rank, int maxIterations) {
    this.device = device;
    this.nx = problem.nx();
    this.rows = blocks.count(rank);
    this.count = nx * rows;
    this.rowBytes = (long) nx * Double.BYTES;
    this.points = new int[] {nx, rows};
    this.groups = CgKernels.dotGroups(count);
    long bytes = (long) count * Double.BYTES;
    ByteBuffer b = doubles(count);
    b.asDoubleBuffer().put(problem.rhsRows(blocks.first(rank), rows));
    x = zeros(bytes);
    r = zeros(bytes);
    p = zeros(bytes);
    device.write(r, b, bytes);
    device.write(p, b, bytes);
    ap = zeros(bytes);
    B above = zeros(rowBytes);
    B below = zeros(rowBytes);
    lastRow = zeros(rowBytes);
    partial = zeros((long) groups * Double.BYTES);
    pap = zeros(Double.BYTES);
    rr.add(zeros(Double.BYTES));
    rr.add(zeros(Double.BYTES));
    history = zeros((long) (maxIterations + 1) * Double.BYTES);
    halo = new Exchange.Halo<>(p, lastRow, above, below, rowBytes, rank > 0 ? rank - 1 : -1,
        rank < blocks.ranks() - 1 ? rank + 1 : -1);
    device.finish();
  }

  /** Enqueues {@code r·r} of the start (every rank's sum) into the history's first place. */
  void start(Exchange<B> exchange) {
    dot(r, r, rr.get(0));
    exchange.sum(rr.get(0));
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
  void iteration(int it, Exchange<B> exchange, Fault fault) {
    B rrOld = rr.get((it - 1) & 1);
    B rrNew = rr.get(it & 1);
    if (halo.down() >= 0) {
      device.copy(p, (long) (rows - 1) * rowBytes, lastRow, 0, rowBytes);
    }
    exchange.halo(halo);
    device.launch("stencil", points, TILE, p, halo.above(), halo.below(), ap, nx, rows);
    dot(p, ap, pap);
    if (fault == Fault.SUM_LATE) {
      device.launch("update_xr", points, TILE, x, r, p, ap, rrOld, pap, nx, rows);
      exchange.sum(pap);
    } else {
      exchange.sum(pap);
      device.launch("update_xr", points, TILE, x, r, p, ap, rrOld, pap, nx, rows);
    }
    dot(r, r, rrNew);
    exchange.sum(rrNew);
    record(it);
    device.launch("update_p", points, TILE, p, r, rrNew, rrOld, nx, rows);
  }

  /**
   * Reads {@code r·r} after iteration {@code it} (0: the start): waits for the queue up to there.
   *
   * @param it the iteration
   * @return every rank's {@code r·r}
   */
  double readRr(int it) {
    return read(rr.get(it & 1), 1)[0];
  }

  /** @return {@code r·r} at the start and after each of {@code iterations} iterations */
  double[] history(int iterations) {
    return read(history, iterations + 1);
  }

  /** @return this rank's rows of x */
  double[] x() {
    return read(x, count);
  }

  /** {@code into[0] = a·b} on this rank's rows: partial sums per work-group, then their sum. */
  private void dot(B a, B b, B into) {
    device.launch("partial_dot", new int[] {groups * CgKernels.GROUP}, GROUP, a, b, partial, count);
    device.launch("sum_partials", GROUP, GROUP, partial, groups, into);
  }

  private void record(int it) {
    device.copy(rr.get(it & 1), 0, history, (long) it * Double.BYTES, Double.BYTES);
  }

  private double[] read(B from, int n) {
    ByteBuffer to = doubles(n);
    device.read(from, 0, to, (long) n * Double.BYTES);
    double[] out = new double[n];
    to.asDoubleBuffer().get(out);
    return out;
  }

  private B zeros(long bytes) {
    B m = device.zeros(bytes);
    buffers.add(m);
    return m;
  }

  /** @return a direct buffer in native order for {@code n} doubles, its position 0 */
  private static ByteBuffer doubles(int n) {
    return ByteBuffer.allocateDirect(Math.multiplyExact(n, Double.BYTES)).order(ByteOrder.nativeOrder());
  }

  /** Releases the buffers, once the queue has finished with them. */
  @Override
  public void close() {
    device.finish();
    buffers.forEach(device::free);
    buffers.clear();
  }
}
