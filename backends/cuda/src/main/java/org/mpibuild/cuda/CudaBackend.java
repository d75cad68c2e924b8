package org.mpibuild.cuda;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import org.mpibuild.BackendUnavailableException;
import org.mpibuild.KernelSource;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Compilation;
import org.mpibuild.spi.LoadedProgram;
import org.mpibuild.spi.Placement;
import org.mpibuild.spi.UseGuard;

/**
 * The CUDA backend. Builds with NVRTC (through JCuda, where libnvrtc is present) or nvcc (a child
 * process, never through a shell), for the architectures of every GPU in the job or for those named in
 * {@code MPI_BUILD_CUDA_ARCH}; loads through the driver API from memory. Native libraries and the driver
 * are probed once; what is missing is reported as "CUDA backend unavailable: reason". The in-process PTX
 * compiler is never used, so no input can crash the JVM through it.
 *
 * <p>Receivers should never JIT: after a compile the root reads the binary ({@link CudaBinaryContents}) and
 * appends to the build log, which travels with the binary to every rank, what it holds and each rank target
 * that has no SASS in it (those ranks JIT-compile PTX at load, or cannot load it); these are also logged as
 * warnings ({@link Coverage}). Before loading, a rank whose GPU has no SASS in the binary logs a warning naming
 * its architecture and the PTX its driver JIT-compiles.
 *
 * <p>This class wires the pieces that do the work: {@link DeviceProbe} finds this rank's GPU
 * ({@link CudaDevice}), {@link CompilerChoice} picks {@link NvrtcCompiler} or {@link NvccCompiler} for a build
 * target, {@link ModuleLoader} loads into the GPU.
 */
final class CudaBackend implements Backend {
  private final CudaSettings settings;
  /** This rank's GPU, or null (then {@link #deviceProblem} says why). */
  private final CudaDevice device;
  private final String deviceProblem;
  private final CompilerChoice compilers;
  /** Loads into this rank's GPU; null without one. */
  private final ModuleLoader loader;
  /**
   * The rank targets the last {@link #buildTarget(List)} call was given, and what it returned: the compile
   * that follows checks the binary against them (a backend is used by one thread at a time).
   */
  private volatile JobBuild lastBuild;
  /**
   * Open until {@link #close()}: then the modules loaded here and the messengers on the context are closed,
   * and only then is the context released.
   */
  private final UseGuard guard = new UseGuard("CUDA context");
  /** The backends not closed yet, to find the owner of a context that a messenger is opened on. */
  private static final Set<CudaBackend> OPEN = ConcurrentHashMap.newKeySet();

  private CudaBackend(CudaSettings settings, DeviceProbe.Found gpu, CompilerChoice compilers) {
    this.settings = settings;
    this.device = gpu.device();
    this.deviceProblem = gpu.problem();
    this.compilers = compilers;
    this.loader = device == null ? null : new ModuleLoader(device, guard);
    OPEN.add(this);
  }

  /**
   * Opens the backend on this rank's GPU, {@code MPI_BUILD_CUDA_DEVICE} or else the one of its rank among its
   * node's ranks ({@link DeviceProbe#ordinal}); without a GPU, only when the targets are named.
   *
   * @param settings the backend's settings
   * @param placement this rank's rank among the ranks of its node, from the communicator
   * @throws BackendUnavailableException if no compiler can run, or there is no GPU and no target is named
   */
  static CudaBackend open(CudaSettings settings, Placement placement) {
    DeviceProbe.Found gpu = DeviceProbe.probe(settings.deviceOrdinal(), placement);
    CompilerChoice compilers = CompilerChoice.probe(settings);
    if (gpu.device() == null && settings.explicitArchs().isEmpty()) {
      throw new BackendUnavailableException("CUDA backend unavailable: " + gpu.problem()
          + "; to build without a GPU, name the targets with MPI_BUILD_CUDA_ARCH (for example sm_90)", null);
    }
    return new CudaBackend(settings, gpu, compilers);
  }

  boolean hasDevice() {
    return device != null;
  }

  String deviceProblem() {
    return deviceProblem;
  }

  @Override
  public String id() {
    return CudaBackendProvider.ID;
  }

  /** This rank's GPU architecture, or {@code none} on a rank without a GPU (compile-only). */
  @Override
  public String target() {
    return device == null ? "none" : device.arch();
  }

  @Override
  public boolean buildsForJobTargets() {
    return settings.explicitArchs().isEmpty();
  }

  @Override
  public String buildTarget(List<String> rankTargets) {
    String target = chooseBuildTarget(rankTargets);
    lastBuild = new JobBuild(target, List.copyOf(rankTargets));
    return target;
  }

  /** A build target and the rank targets it was chosen for. */
  private record JobBuild(String target, List<String> rankTargets) {}

  private String chooseBuildTarget(List<String> rankTargets) {
    if (!settings.explicitArchs().isEmpty()) {
      return CudaArch.target(settings.explicitArchs());
    }
    List<Integer> without = new ArrayList<>();
    for (int r = 0; r < rankTargets.size(); r++) {
      if (rankTargets.get(r).equals("none")) {
        without.add(r);
      }
    }
    if (!without.isEmpty()) {
      throw new IllegalStateException("ranks " + without + " have no GPU; name the targets with MPI_BUILD_CUDA_ARCH");
    }
    return CudaArch.target(CudaArch.parse(String.join(",", rankTargets)));
  }

  @Override
  public String compilerIdentity(String buildTarget) {
    return compilers.forTarget(buildTarget).identity(buildTarget);
  }

  @Override
  public String compilerIdentity() {
    return compilerIdentity(buildTarget(List.of(target())));
  }

  @Override
  public boolean canLoad(String binaryTarget) {
    return device != null && CudaArch.runs(binaryTarget, device.arch());
  }

  @Override
  public Compilation compile(KernelSource request) {
    return compile(request, buildTarget(List.of(target())));
  }

  @Override
  public Compilation compile(KernelSource request, String buildTarget) {
    if (request.kernelNames().isEmpty()) {
      throw new IllegalArgumentException("name the kernels to create (withKernels): a CUDA module cannot list its"
          + " functions; use extern \"C\" names");
    }
    List<String> archs = CudaArch.parse(buildTarget);
    CudaCompiler.Output out = compilers.forTarget(buildTarget).compile(request, archs);
    JobBuild job = lastBuild;
    List<String> rankTargets = job != null && job.target().equals(buildTarget) ? job.rankTargets() : List.of(target());
    String buildLog = Coverage.of(out.binary(), archs, rankTargets).appendTo(out.log());
    LoadedProgram program = canLoad(buildTarget) ? load(out.binary(), request.kernelNames()) : null;
    return new Compilation(program, out.binary(), buildLog);
  }

  @Override
  public LoadedProgram load(byte[] binary, List<String> kernelNames) {
    return load(ByteBuffer.wrap(binary), Pointer.to(binary), kernelNames);
  }

  /** The driver reads the binary where it lies: a received binary is never copied into the heap. */
  @Override
  public LoadedProgram load(ByteBuffer binary, List<String> kernelNames) {
    return binary.isDirect() ? load(binary, Pointer.to(binary), kernelNames) : Backend.super.load(binary, kernelNames);
  }

  private LoadedProgram load(ByteBuffer bytes, Pointer binary, List<String> kernelNames) {
    if (loader == null) {
      throw new IllegalStateException("this rank has no GPU: " + deviceProblem);
    }
    return loader.load(bytes, binary, kernelNames);
  }

  /**
   * Closes the modules loaded here and the messengers on the context (later calls on them throw, saying
   * that their MpiBuild was closed), then releases the context. Idempotent.
   */
  @Override
  public void close() {
    OPEN.remove(this);
    if (guard.close("its MpiBuild was closed") && device != null) {
      device.release();
    }
  }

  /** The guard that modules and messengers register with, so that they are closed before the context. */
  UseGuard guard() {
    return guard;
  }

  /**
   * Returns an open backend whose context {@code context} is, if any.
   *
   * @param context a CUDA context
   * @return its backend, or null for a context the program made itself
   */
  static CudaBackend owning(CUcontext context) {
    for (CudaBackend b : OPEN) {
      if (b.device != null && b.device.context().equals(context)) {
        return b;
      }
    }
    return null;
  }
}
