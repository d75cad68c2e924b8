package org.mpibuild.examples.cg;

import java.util.List;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;

/**
 * The solver's OpenCL kernels, in one program built once for every rank, and the launch shapes it names so that
 * the root builds their finished machine code too (see docs/launch-shapes.md).
 *
 * <p>Every element-wise kernel runs on a 2-D grid of {@value #TILE_X} × {@value #TILE_Y} work-groups over a rank's
 * {@code nx × rows} points (rounded up; the extra work-items do nothing), so no dimension of a launch passes
 * PoCL's "small grid" limit of 65,535 for any grid this solver can hold, and the named shapes are the shapes
 * launched. Dot products run in two kernels: {@code partial_dot}, at most {@value #MAX_GROUPS} work-groups of
 * {@value #GROUP}, each summing a grid-strided share into one partial sum, then {@code sum_partials}, one work-group
 * adding the partial sums into one value. That value is what ranks all-reduce.
 */
public final class CgKernels {
  /** The work-group size of {@code partial_dot} and {@code sum_partials}. */
  public static final int GROUP = 64;
  /** The most work-groups of {@code partial_dot}. */
  public static final int MAX_GROUPS = 256;
  /** The 2-D work-group of the element-wise kernels: columns. */
  public static final int TILE_X = 16;
  /** The 2-D work-group of the element-wise kernels: rows. */
  public static final int TILE_Y = 4;

  /** The OpenCL C source (double precision: {@code cl_khr_fp64}). */
  public static final String SOURCE = String.join("\n",
      "#pragma OPENCL EXTENSION cl_khr_fp64 : enable",
      "#define GROUP " + GROUP,
      "",
      "/* ap = A p on this rank's rows; above and below hold the neighbours' rows (zero at the domain's edge) */",
      "__kernel void stencil(__global const double* p, __global const double* above,",
      "                      __global const double* below, __global double* ap, const int nx, const int rows) {",
      "  int i = get_global_id(0), j = get_global_id(1);",
      "  if (i >= nx || j >= rows) return;",
      "  int k = j * nx + i;",
      "  double up = j > 0 ? p[k - nx] : above[i];",
      "  double down = j < rows - 1 ? p[k + nx] : below[i];",
      "  double left = i > 0 ? p[k - 1] : 0.0;",
      "  double right = i < nx - 1 ? p[k + 1] : 0.0;",
      "  ap[k] = 4.0 * p[k] - up - down - left - right;",
      "}",
      "",
      "/* adds s[0..GROUP) into s[0], every work-item of the group taking part */",
      "void reduce_group(__local double* s, int l) {",
      "  barrier(CLK_LOCAL_MEM_FENCE);",
      "  for (int stride = GROUP / 2; stride > 0; stride >>= 1) {",
      "    if (l < stride) s[l] += s[l + stride];",
      "    barrier(CLK_LOCAL_MEM_FENCE);",
      "  }",
      "}",
      "",
      "/* partial[g] = the sum of a[k] * b[k] over work-group g's grid-strided share of k < count */",
      "__kernel void partial_dot(__global const double* a, __global const double* b, __global double* partial,",
      "                  const int count) {",
      "  __local double s[GROUP];",
      "  int l = get_local_id(0);",
      "  double sum = 0.0;",
      "  for (int k = get_global_id(0); k < count; k += get_global_size(0)) sum += a[k] * b[k];",
      "  s[l] = sum;",
      "  reduce_group(s, l);",
      "  if (l == 0) partial[get_group_id(0)] = s[0];",
      "}",
      "",
      "/* out[0] = the sum of partial[0..groups), in one work-group */",
      "__kernel void sum_partials(__global const double* partial, const int groups, __global double* out) {",
      "  __local double s[GROUP];",
      "  int l = get_local_id(0);",
      "  double sum = 0.0;",
      "  for (int g = l; g < groups; g += GROUP) sum += partial[g];",
      "  s[l] = sum;",
      "  reduce_group(s, l);",
      "  if (l == 0) out[0] = s[0];",
      "}",
      "",
      "/* alpha = rr / pap; x += alpha p; r -= alpha ap (rr and pap: every rank's sums) */",
      "__kernel void update_xr(__global double* x, __global double* r, __global const double* p,",
      "                        __global const double* ap, __global const double* rr, __global const double* pap,",
      "                        const int nx, const int rows) {",
      "  int i = get_global_id(0), j = get_global_id(1);",
      "  if (i >= nx || j >= rows) return;",
      "  int k = j * nx + i;",
      "  double alpha = pap[0] != 0.0 ? rr[0] / pap[0] : 0.0;",
      "  x[k] += alpha * p[k];",
      "  r[k] -= alpha * ap[k];",
      "}",
      "",
      "/* beta = rr_new / rr_old; p = r + beta p */",
      "__kernel void update_p(__global double* p, __global const double* r, __global const double* rr_new,",
      "                       __global const double* rr_old, const int nx, const int rows) {",
      "  int i = get_global_id(0), j = get_global_id(1);",
      "  if (i >= nx || j >= rows) return;",
      "  int k = j * nx + i;",
      "  double beta = rr_old[0] != 0.0 ? rr_new[0] / rr_old[0] : 0.0;",
      "  p[k] = r[k] + beta * p[k];",
      "}",
      "");

  /** The kernels, in the order the program declares them. */
  public static final List<String> KERNELS = List.of("stencil", "partial_dot", "sum_partials", "update_xr", "update_p");

  private CgKernels() {}

  /**
   * The request every rank passes: the program, its kernels and, where {@code shapes} holds, the launch shape of
   * each kernel, so that no rank makes machine code at its first launch.
   *
   * @param shapes whether to name the launch shapes
   * @return the request
   */
  public static KernelSource request(boolean shapes) {
    KernelSource request = KernelSource.of(SOURCE).withKernels(KERNELS).withOptions("-cl-std=CL1.2");
    if (!shapes) {
      return request;
    }
    return request.withLaunchShapes(
        LaunchShape.of("stencil", TILE_X, TILE_Y),
        LaunchShape.of("partial_dot", GROUP),
        LaunchShape.of("sum_partials", GROUP),
        LaunchShape.of("update_xr", TILE_X, TILE_Y),
        LaunchShape.of("update_p", TILE_X, TILE_Y));
  }

  /** @return how many work-groups {@code partial_dot} runs over {@code count} values */
  public static int dotGroups(int count) {
    return Math.max(1, Math.min(MAX_GROUPS, (count + GROUP - 1) / GROUP));
  }

  /** @return {@code n} rounded up to a multiple of {@code m} */
  static long roundUp(int n, int m) {
    return (long) (n + m - 1) / m * m;
  }
}
