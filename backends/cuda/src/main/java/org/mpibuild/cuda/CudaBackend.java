package org.mpibuild.cuda;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 * warnings. Before loading, a rank whose GPU has no SASS in the binary logs a warning naming its
 * architecture and the PTX its driver JIT-compiles.
 */
final class CudaBackend implements Backend {
  private static final Logger log = LoggerFactory.getLogger(CudaBackend.class);

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
    String buildLog = withCoverage(out.log(), coverage(out.binary(), archs, rankTargets));
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

  /**
   * What the root found in a binary it just built: one line saying what it holds, then, for each
   * architecture asked for that has no SASS and for each rank target that would not run SASS, a warning
   * (JIT-compiled PTX, or nothing to run). Rank targets {@code none} (no GPU) are left out.
   *
   * @param info lines for the build log only
   * @param warnings lines for the build log that are also logged as warnings
   */
  record Coverage(List<String> info, List<String> warnings) {
    List<String> lines() {
      List<String> all = new ArrayList<>(info);
      all.addAll(warnings);
      return all;
    }
  }

  /**
   * Checks a binary against the architectures asked for and the targets of the ranks it is for.
   *
   * @param binary the fatbin or cubin
   * @param requested the architectures of the build target
   * @param rankTargets the target of every rank the binary is for (duplicates counted, {@code none} skipped)
   * @return what to report
   */
  static Coverage coverage(byte[] binary, List<String> requested, List<String> rankTargets) {
    List<String> info = new ArrayList<>();
    List<String> warnings = new ArrayList<>();
    CudaBinaryContents contents;
    try {
      contents = CudaBinaryContents.read(binary);
    } catch (CudaBinaryFormatException e) {
      warnings.add("mpi-build: cannot list what the binary holds, so whether ranks JIT-compile PTX is unknown: "
          + e.getMessage());
      return new Coverage(info, warnings);
    }
    info.add("mpi-build: the binary is a " + contents.summary());
    for (String a : requested) {
      if (contents.sass().stream().noneMatch(c -> c.arch() == CudaArch.number(a))) {
        warnings.add("mpi-build: " + a + " was asked for, but the binary holds no SASS for it (check the build"
            + " options)");
      }
    }
    Map<String, Integer> ranks = new LinkedHashMap<>();
    for (String t : rankTargets) {
      if (t != null && !t.equals("none")) {
        ranks.merge(t, 1, Integer::sum);
      }
    }
    for (Map.Entry<String, Integer> t : ranks.entrySet()) {
      CudaBinaryContents.LoadPlan plan = contents.plan(t.getKey());
      String who = t.getKey() + " (the GPU of " + t.getValue() + (t.getValue() == 1 ? " rank" : " ranks")
          + " in the job that built it)";
      switch (plan.how()) {
        case COMPATIBLE_SASS:
          info.add("mpi-build: no SASS for " + who + "; those ranks run the binary-compatible SASS for "
              + plan.code().sassName() + ", without JIT");
          break;
        case JIT_PTX:
          warnings.add("mpi-build: no SASS for " + who + "; those ranks JIT-compile the PTX "
              + plan.code().ptxDescription() + " at load (add " + t.getKey() + " to MPI_BUILD_CUDA_ARCH, or unset it"
              + " to build for the job's GPUs)");
          break;
        case NONE:
          warnings.add("mpi-build: no code for " + who + ": neither SASS nor PTX it can JIT-compile; those ranks"
              + " cannot load the binary");
          break;
        default:
          break;
      }
    }
    return new Coverage(info, warnings);
  }

  private static String withCoverage(String buildLog, Coverage coverage) {
    coverage.warnings().forEach(w -> log.warn(w.substring("mpi-build: ".length())));
    coverage.info().forEach(i -> log.debug(i.substring("mpi-build: ".length())));
    StringBuilder b = new StringBuilder(buildLog == null ? "" : buildLog);
    if (b.length() > 0 && b.charAt(b.length() - 1) != '\n') {
      b.append('\n');
    }
    coverage.lines().forEach(l -> b.append(l).append('\n'));
    return b.toString();
  }
}
