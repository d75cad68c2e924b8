package org.mpibuild.examples.cg;

import java.util.List;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;

/**
 * The solver's kernels, in one program built once for every rank, in OpenCL C ({@link #SOURCE}) and in CUDA C
 * ({@link #CUDA_SOURCE}) from one body ({@link #BODY}), and the launch shapes the OpenCL request names so that
 * the root builds their finished machine code too (see docs/launch-shapes.md). Below, a work-group is a CUDA
 * thread block.
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

  /**
   * The kernels' bodies, written once for both languages in the words of OpenCL: the {@code CG_} macros that
   * {@link #SOURCE} and {@link #CUDA_SOURCE} define first say what each word is in OpenCL C and in CUDA C.
   */
  static final String BODY = String.join("\n",
      "#define GROUP " + GROUP,
      "",
      "/* ap = A p on this rank's rows; above and below hold the neighbours' rows (zero at the domain's edge) */",
      "CG_KERNEL void stencil(CG_GLOBAL const double* p, CG_GLOBAL const double* above,",
      "                       CG_GLOBAL const double* below, CG_GLOBAL double* ap, const int nx, const int rows) {",
      "  int i = CG_GLOBAL_ID_X, j = CG_GLOBAL_ID_Y;",
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
      "CG_DEVICE void reduce_group(CG_LOCAL_PTR double* s, int l) {",
      "  CG_BARRIER;",
      "  for (int stride = GROUP / 2; stride > 0; stride >>= 1) {",
      "    if (l < stride) s[l] += s[l + stride];",
      "    CG_BARRIER;",
      "  }",
      "}",
      "",
      "/* partial[g] = the sum of a[k] * b[k] over work-group g's grid-strided share of k < count */",
      "CG_KERNEL void partial_dot(CG_GLOBAL const double* a, CG_GLOBAL const double* b, CG_GLOBAL double* partial,",
      "                           const int count) {",
      "  CG_LOCAL double s[GROUP];",
      "  int l = CG_LOCAL_ID_X;",
      "  double sum = 0.0;",
      "  for (int k = CG_GLOBAL_ID_X; k < count; k += CG_GLOBAL_SIZE_X) sum += a[k] * b[k];",
      "  s[l] = sum;",
      "  reduce_group(s, l);",
      "  if (l == 0) partial[CG_GROUP_ID_X] = s[0];",
      "}",
      "",
      "/* out[0] = the sum of partial[0..groups), in one work-group */",
      "CG_KERNEL void sum_partials(CG_GLOBAL const double* partial, const int groups, CG_GLOBAL double* out) {",
      "  CG_LOCAL double s[GROUP];",
      "  int l = CG_LOCAL_ID_X;",
      "  double sum = 0.0;",
      "  for (int g = l; g < groups; g += GROUP) sum += partial[g];",
      "  s[l] = sum;",
      "  reduce_group(s, l);",
      "  if (l == 0) out[0] = s[0];",
      "}",
      "",
      "/* alpha = rr / pap; x += alpha p; r -= alpha ap (rr and pap: every rank's sums) */",
      "CG_KERNEL void update_xr(CG_GLOBAL double* x, CG_GLOBAL double* r, CG_GLOBAL const double* p,",
      "                         CG_GLOBAL const double* ap, CG_GLOBAL const double* rr, CG_GLOBAL const double* pap,",
      "                         const int nx, const int rows) {",
      "  int i = CG_GLOBAL_ID_X, j = CG_GLOBAL_ID_Y;",
      "  if (i >= nx || j >= rows) return;",
      "  int k = j * nx + i;",
      "  double alpha = pap[0] != 0.0 ? rr[0] / pap[0] : 0.0;",
      "  x[k] += alpha * p[k];",
      "  r[k] -= alpha * ap[k];",
      "}",
      "",
      "/* beta = rr_new / rr_old; p = r + beta p */",
      "CG_KERNEL void update_p(CG_GLOBAL double* p, CG_GLOBAL const double* r, CG_GLOBAL const double* rr_new,",
      "                        CG_GLOBAL const double* rr_old, const int nx, const int rows) {",
      "  int i = CG_GLOBAL_ID_X, j = CG_GLOBAL_ID_Y;",
      "  if (i >= nx || j >= rows) return;",
      "  int k = j * nx + i;",
      "  double beta = rr_old[0] != 0.0 ? rr_new[0] / rr_old[0] : 0.0;",
      "  p[k] = r[k] + beta * p[k];",
      "}",
      "");

  /** The OpenCL C source (double precision: {@code cl_khr_fp64}). */
  public static final String SOURCE = String.join("\n",
      "#pragma OPENCL EXTENSION cl_khr_fp64 : enable",
      "#define CG_KERNEL __kernel",
      "#define CG_DEVICE",
      "#define CG_GLOBAL __global",
      "#define CG_LOCAL __local",
      "#define CG_LOCAL_PTR __local",
      "#define CG_BARRIER barrier(CLK_LOCAL_MEM_FENCE)",
      "#define CG_GLOBAL_ID_X get_global_id(0)",
      "#define CG_GLOBAL_ID_Y get_global_id(1)",
      "#define CG_LOCAL_ID_X get_local_id(0)",
      "#define CG_GROUP_ID_X get_group_id(0)",
      "#define CG_GLOBAL_SIZE_X get_global_size(0)",
      BODY);

  /**
   * The CUDA C source: the same kernels ({@code extern "C"}, so their names stay unmangled), a work-group a thread
   * block, local memory {@code __shared__}.
   */
  public static final String CUDA_SOURCE = String.join("\n",
      "#define CG_KERNEL extern \"C\" __global__",
      "#define CG_DEVICE __device__",
      "#define CG_GLOBAL",
      "#define CG_LOCAL __shared__",
      "#define CG_LOCAL_PTR",
      "#define CG_BARRIER __syncthreads()",
      "#define CG_GLOBAL_ID_X ((int) (blockIdx.x * blockDim.x + threadIdx.x))",
      "#define CG_GLOBAL_ID_Y ((int) (blockIdx.y * blockDim.y + threadIdx.y))",
      "#define CG_LOCAL_ID_X ((int) threadIdx.x)",
      "#define CG_GROUP_ID_X blockIdx.x",
      "#define CG_GLOBAL_SIZE_X ((int) (gridDim.x * blockDim.x))",
      BODY);

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

  /**
   * The CUDA request every rank passes: the program and its kernels. It names no launch shapes: the CUDA backend
   * builds machine code (SASS) for the job's GPUs, and a launch has nothing left to compile.
   *
   * @return the request
   */
  public static KernelSource cudaRequest() {
    return KernelSource.of(CUDA_SOURCE).withKernels(KERNELS);
  }

  /** @return how many groups of {@code group} cover {@code items} (the last one may be partly idle) */
  static int groups(int items, int group) {
    return (items + group - 1) / group;
  }
}
