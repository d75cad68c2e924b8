package org.mpibuild.opencl;

import static org.jocl.CL.CL_BUILD_PROGRAM_FAILURE;
import static org.jocl.CL.CL_COMPILE_PROGRAM_FAILURE;
import static org.jocl.CL.CL_INVALID_COMPILER_OPTIONS;
import static org.jocl.CL.CL_INVALID_BUILD_OPTIONS;
import static org.jocl.CL.CL_INVALID_KERNEL_NAME;
import static org.jocl.CL.CL_KERNEL_FUNCTION_NAME;
import static org.jocl.CL.CL_PROGRAM_BINARIES;
import static org.jocl.CL.CL_PROGRAM_BINARY_SIZES;
import static org.jocl.CL.CL_PROGRAM_BUILD_LOG;
import static org.jocl.CL.CL_PROGRAM_KERNEL_NAMES;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.clBuildProgram;
import static org.jocl.CL.clCompileProgram;
import static org.jocl.CL.clCreateKernel;
import static org.jocl.CL.clCreateKernelsInProgram;
import static org.jocl.CL.clCreateProgramWithBinary;
import static org.jocl.CL.clCreateProgramWithSource;
import static org.jocl.CL.clGetKernelInfo;
import static org.jocl.CL.clGetProgramBuildInfo;
import static org.jocl.CL.clGetProgramInfo;
import static org.jocl.CL.clReleaseCommandQueue;
import static org.jocl.CL.clReleaseContext;
import static org.jocl.CL.clReleaseProgram;
import static org.mpibuild.opencl.ClInfo.check;
import static org.mpibuild.opencl.ClInfo.cString;
import static org.mpibuild.opencl.ClInfo.infoString;
import static org.mpibuild.opencl.ClInfo.programString;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_device_id;
import org.jocl.cl_kernel;
import org.jocl.cl_program;
import org.mpibuild.CompileException;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Compilation;
import org.mpibuild.spi.LoadedProgram;
import org.mpibuild.spi.UseGuard;

/** The OpenCL backend on one device, through JOCL. Calls are checked by return code, never by JOCL's global exception switch. */
final class OpenClBackend implements Backend {
  static final String JOCL_LIBRARY = "JOCL_2_0_5";
  /** The backends not closed yet, to find the owner of a queue that a messenger is opened on. */
  private static final Set<OpenClBackend> OPEN = ConcurrentHashMap.newKeySet();

  private final cl_device_id device;
  private final cl_context context;
  private final cl_command_queue queue;
  private final String target;
  private final String compiler;
  /** Where this device is, for a compile in a child process: the platform's and the device's index. */
  final int platformIndex;
  final int deviceIndex;
  private final boolean pocl;
  /** Whether this backend wants a PoCL compile process started ahead ({@link #prepareCompiles}). */
  private volatile boolean compilesAhead;
  /** Why a compile with launch shapes cannot run in this process ({@link PoclInProcessCompile}); null where it can. */
  private final String inProcessProblem;
  /** Open until {@link #close()}: then the programs and messengers here close, then the queue and context. */
  private final UseGuard guard = new UseGuard("OpenCL context and command queue");

  OpenClBackend(cl_device_id device, cl_context context, cl_command_queue queue, String target,
      String compiler, int platformIndex, int deviceIndex, boolean pocl) {
    this.device = device;
    this.context = context;
    this.queue = queue;
    this.target = target;
    this.compiler = compiler;
    this.platformIndex = platformIndex;
    this.deviceIndex = deviceIndex;
    this.pocl = pocl;
    this.inProcessProblem = pocl ? PoclInProcessCompile.unavailable(compiler) : "not PoCL";
    OPEN.add(this);
  }

  @Override
  public String id() {
    return OpenClBackendProvider.ID;
  }

  @Override
  public String target() {
    return target;
  }

  @Override
  public String compilerIdentity() {
    return compiler;
  }

  /** The shapes this device cannot launch: see {@link WorkGroupLimits}. */
  @Override
  public String requestProblem(KernelSource request) {
    WorkGroupLimits limits = WorkGroupLimits.of(device);
    return limits == null || request.launchShapes().isEmpty() ? null : limits.problem(request.launchShapes());
  }

  /** Every compile and load holds the guard: after {@link #close} it throws, and a close waits for it (or leaks). */
  @Override
  public Compilation compile(KernelSource request) {
    try (UseGuard.Use use = guard.enter()) {
      return compileOpen(request);
    }
  }

  private Compilation compileOpen(KernelSource request) {
    if (pocl && !request.launchShapes().isEmpty()) {
      // PoCL puts specialized work-group functions into a binary only when its environment names them: here where
      // this process can name them, else in a compile process (one started ahead, if any).
      PoclSpecialization.Result r = compiledHere(request);
      return r != null ? loaded(request, r.binary(), r.buildLog()) : inCompileProcess(request);
    }
    // Asking for the binary makes PoCL generate every kernel's code now: ready to launch here, to load elsewhere
    return kernelsOf(request, build(request.source(), request.options()), true);
  }

  /**
   * On PoCL with launch shapes named, the request's (kernel, shape) pairs dealt between the ranks
   * ({@link PoclSpecialization#parts}): each rank builds its pairs' functions after the same front end (built once,
   * here, where the ranks compile in their own process: {@link PoclInProcessCompile#shareFrontEnd}). Elsewhere none.
   */
  @Override
  public List<String> compileParts(KernelSource request, int ranks) {
    List<String> parts = pocl && !request.launchShapes().isEmpty() ? PoclSpecialization.parts(request, ranks) : List.of();
    try (UseGuard.Use use = guard.enter()) { // what it keeps for the root's part, close releases after the uses
      return inProcessProblem == null ? PoclInProcessCompile.shareFrontEnd(this, request, parts) : parts;
    }
  }

  @Override
  public Compilation compilePart(KernelSource request, String buildTarget, String part) {
    if (!pocl) {
      throw new IllegalArgumentException("a shared compile's part needs PoCL; this device's platform is " + target);
    }
    Map<String, Set<String>> named = PoclSpecialization.part(request, part);
    PoclSpecialization.Result r = null;
    if (inProcessProblem == null) {
      try (UseGuard.Use use = guard.enter()) {
        r = PoclInProcessCompile.compilePart(this, request, part, named);
      }
    }
    r = r != null ? r : PoclSpecialization.compilePart(request, named, platformIndex, deviceIndex, compilesAhead);
    return new Compilation(null, r.binary(), r.buildLog());
  }

  /** On PoCL, unless every compile runs here, a compile process started ahead ({@link SpareCompileProcess}). */
  @Override
  public void prepareCompiles() {
    if (pocl && !compilesAhead && (inProcessProblem != null || SpecializeVariable.keepsFirstValue(compiler))) {
      compilesAhead = true;
      SpareCompileProcess.want(platformIndex, deviceIndex);
    }
  }

  /** The parts' binaries joined ({@link PoclBinary#combine}), loaded here as {@link #compile}'s would be. */
  @Override
  public Compilation joinParts(KernelSource request, String buildTarget, List<Compilation> parts) {
    byte[] binary = PoclBinary.combine(parts.stream().map(Compilation::binary).toList());
    return loaded(request, binary, parts.get(0).buildLog());
  }

  /** A binary made for {@code request} in a compile process, loaded here. */
  private Compilation loaded(KernelSource request, byte[] binary, String log) {
    return finished(request, (OpenClKernel) load(binary, request.kernelNames()), binary, log);
  }

  /**
   * A request only this rank runs, which a cache keeps ({@code needBinary}) on PoCL with launch shapes named: built
   * here as a rank that compiles for itself builds it, its binary taken, when wanted, from the program its launches
   * generated code into ({@link PoclLaunchedBinary}); else the binary made in this process first, then loaded
   * ({@link PoclInProcessCompile}); else the program built here while the compile process makes the binary for the
   * cache at the idle priority ({@link PoclSpecialization#later}, one at a time per process). Without
   * {@code needBinary}, no binary at all. Another platform, or a binary being made in the background already,
   * compiles as {@link #compile} does.
   */
  @Override
  public Compilation compileAlone(KernelSource request, String buildTarget, boolean needBinary) {
    try (UseGuard.Use use = guard.enter()) {
      return compileAloneOpen(request, needBinary);
    }
  }

  private Compilation compileAloneOpen(KernelSource request, boolean needBinary) {
    boolean shapes = needBinary && pocl && !request.launchShapes().isEmpty();
    Compilation launched = shapes ? PoclLaunchedBinary.compile(this, request) : null;
    if (launched != null) {
      return launched;
    }
    PoclSpecialization.Result r = shapes ? compiledHere(request) : null;
    if (r != null) {
      return loaded(request, r.binary(), r.buildLog());
    }
    boolean binaryLater = shapes && PoclSpecialization.reserveBackground();
    if (needBinary && !binaryLater) {
      return shapes ? inCompileProcess(request) : compile(request); // not here again: that was tried
    }
    Compilation here;
    try {
      here = kernelsOf(request, build(request.source(), request.options()), false);
    } catch (RuntimeException e) {
      if (binaryLater) {
        PoclSpecialization.releaseReservation();
      }
      throw e;
    }
    return binaryLater
        ? Compilation.later(here.program(), here.buildLog(), PoclSpecialization.later(request, platformIndex, deviceIndex))
        : Compilation.withoutBinary(here.program(), here.buildLog());
  }

  /** {@code request}'s binary with its named functions, made in this process; null where it cannot be made here. */
  private PoclSpecialization.Result compiledHere(KernelSource request) {
    return inProcessProblem == null
        ? PoclInProcessCompile.compile(this, request, PoclSpecialization.perKernel(request.launchShapes())) : null;
  }

  /** {@code program}'s compilation: its kernels, its log and, {@code withBinary}, its binary; released if refused. */
  private Compilation kernelsOf(KernelSource request, cl_program program, boolean withBinary) {
    OpenClKernel kernels;
    String log;
    byte[] binary;
    try {
      log = buildLog(program);
      binary = withBinary ? programBinary(program) : null;
      kernels = createKernels(program, request.kernelNames());
    } catch (RuntimeException e) {
      clReleaseProgram(program);
      throw e;
    }
    return finished(request, kernels, binary, log); // which releases the kernels and the program if it refuses them
  }

  /** {@code request} compiled by a compile process (one started ahead, if any), loaded here. */
  private Compilation inCompileProcess(KernelSource request) {
    PoclSpecialization.Result r = PoclSpecialization.compile(request, platformIndex, deviceIndex, compilesAhead);
    return loaded(request, r.binary(), r.buildLog());
  }

  /** The compilation, once every launch shape is known to name a kernel of the program. */
  static Compilation finished(KernelSource request, OpenClKernel kernels, byte[] binary, String log) {
    for (LaunchShape shape : request.launchShapes()) {
      if (!kernels.kernelNames().contains(shape.kernel())) {
        kernels.close();
        throw new IllegalArgumentException("launch shape '" + shape + "' names kernel '" + shape.kernel()
            + "', which the program does not define (it defines " + kernels.kernelNames() + ")");
      }
    }
    return new Compilation(kernels, binary, log);
  }

  /** {@link #build(String, String, boolean)}, compiled and linked. */
  cl_program build(String source, String options) {
    return build(source, options, false);
  }

  /**
   * Builds a program from source for this device; with {@code compileOnly}, its front end only ({@code clCompileProgram}).
   *
   * @throws CompileException with the build log if the compiler rejects the source
   * @throws IllegalArgumentException if the options are invalid
   */
  cl_program build(String source, String options, boolean compileOnly) {
    int failure = compileOnly ? CL_COMPILE_PROGRAM_FAILURE : CL_BUILD_PROGRAM_FAILURE;
    for (int attempt = 1; ; attempt++) {
      int[] err = new int[1];
      cl_program program = clCreateProgramWithSource(context, 1, new String[] {source}, null, err);
      check(err[0], "clCreateProgramWithSource");
      cl_device_id[] on = {device};
      int rc = compileOnly ? clCompileProgram(program, 1, on, options, 0, null, null, null, null)
          : clBuildProgram(program, 1, on, options, null, null);
      if (rc == CL_SUCCESS) {
        return program;
      }
      String log = buildLog(program);
      clReleaseProgram(program);
      if (rc == CL_INVALID_BUILD_OPTIONS || rc == CL_INVALID_COMPILER_OPTIONS) {
        throw new IllegalArgumentException("invalid build options '" + options + "' ("
            + CL.stringFor_errorCode(rc) + ")" + (log.isBlank() ? "" : ": " + log.strip()));
      }
      if (!PoclCacheRace.retry(pocl, rc == failure, log, attempt)) {
        throw new CompileException((compileOnly ? "clCompileProgram" : "clBuildProgram") + " failed: "
            + CL.stringFor_errorCode(rc) + PoclCacheRace.advice(pocl && rc == failure, log), log);
      }
      PoclCacheRace.pause(attempt, log);
    }
  }

  @Override
  public LoadedProgram load(byte[] binary, List<String> kernelNames) {
    try (UseGuard.Use use = guard.enter()) {
      return loadOpen(binary, kernelNames);
    }
  }

  private LoadedProgram loadOpen(byte[] binary, List<String> kernelNames) {
    int[] err = new int[1];
    int[] status = new int[1];
    cl_program program = clCreateProgramWithBinary(context, 1, new cl_device_id[] {device},
        new long[] {binary.length}, new byte[][] {binary}, status, err);
    if (err[0] != CL_SUCCESS) {
      throw new IllegalStateException("clCreateProgramWithBinary failed: " + CL.stringFor_errorCode(err[0])
          + " (binary status " + CL.stringFor_errorCode(status[0]) + ", " + binary.length + " bytes)");
    }
    try {
      int rc = clBuildProgram(program, 1, new cl_device_id[] {device}, "", null, null);
      if (rc != CL_SUCCESS) {
        throw new IllegalStateException("clBuildProgram from binary failed: " + CL.stringFor_errorCode(rc)
            + ": " + buildLog(program).strip());
      }
      return createKernels(program, kernelNames);
    } catch (RuntimeException e) {
      clReleaseProgram(program);
      throw e;
    }
  }

  OpenClKernel createKernels(cl_program program, List<String> names) {
    Map<String, cl_kernel> kernels = new LinkedHashMap<>();
    int[] err = new int[1];
    try {
      if (names.isEmpty()) {
        int[] n = new int[1];
        check(clCreateKernelsInProgram(program, 0, null, n), "clCreateKernelsInProgram");
        if (n[0] == 0) {
          throw new IllegalArgumentException("the source defines no kernel");
        }
        cl_kernel[] all = new cl_kernel[n[0]];
        check(clCreateKernelsInProgram(program, all.length, all, null), "clCreateKernelsInProgram");
        for (cl_kernel k : all) {
          kernels.put(kernelName(k), k);
        }
      } else {
        for (String name : names) {
          cl_kernel k = clCreateKernel(program, name, err);
          if (err[0] == CL_INVALID_KERNEL_NAME) {
            throw new IllegalArgumentException("unknown kernel name '" + name + "': the source defines "
                + definedKernels(program));
          }
          check(err[0], "clCreateKernel(" + name + ")");
          kernels.put(name, k);
        }
      }
      return new OpenClKernel(this, program, kernels);
    } catch (RuntimeException e) {
      kernels.values().forEach(CL::clReleaseKernel);
      throw e;
    }
  }

  static List<String> definedKernels(cl_program program) {
    return Arrays.stream(programString(program, CL_PROGRAM_KERNEL_NAMES).split(";")).map(String::trim)
        .filter(s -> !s.isEmpty()).toList();
  }

  private static String kernelName(cl_kernel k) {
    return infoString("clGetKernelInfo", (n, v, r) -> clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, n, v, r));
  }

  /** The program's binary, made under {@link NativeEnvironment#LOCK}: PoCL reads its variables at the query. */
  byte[] programBinary(cl_program program) {
    synchronized (NativeEnvironment.LOCK) {
      long[] sizes = new long[1];
      check(clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, Sizeof.size_t, Pointer.to(sizes), null),
          "clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)");
      if (sizes[0] <= 0 || sizes[0] > Integer.MAX_VALUE - 8) {
        throw new IllegalStateException("the OpenCL driver reports a program binary of " + sizes[0] + " bytes");
      }
      byte[] binary = new byte[(int) sizes[0]];
      check(clGetProgramInfo(program, CL_PROGRAM_BINARIES, Sizeof.POINTER, Pointer.to(Pointer.to(binary)), null),
          "clGetProgramInfo(CL_PROGRAM_BINARIES)");
      return binary;
    }
  }

  String buildLog(cl_program program) {
    long[] size = new long[1];
    if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, null, size) != CL_SUCCESS || size[0] <= 1) {
      return "";
    }
    byte[] b = new byte[(int) size[0]];
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, b.length, Pointer.to(b), null);
    return cString(b);
  }

  /** The context, the device and the queue: each throws IllegalStateException if the backend is closed. */
  cl_context context() {
    guard.check();
    return context;
  }

  cl_device_id device() {
    guard.check();
    return device;
  }

  cl_command_queue queue() {
    guard.check();
    return queue;
  }

  /** The guard that programs and messengers register with, so that they are closed before the queue. */
  UseGuard guard() {
    return guard;
  }

  /** The open backend whose command queue {@code queue} is; null for a queue the program made itself. */
  static OpenClBackend owning(cl_command_queue queue) {
    for (OpenClBackend b : OPEN) {
      if (b.queue.equals(queue)) {
        return b;
      }
    }
    return null;
  }

  /**
   * Closes the programs loaded here and the messengers on the queue (later calls on them throw, saying
   * that their MpiBuild was closed), then releases the queue and the context. Idempotent.
   */
  @Override
  public void close() {
    OPEN.remove(this);
    if (compilesAhead) {
      compilesAhead = false;
      SpareCompileProcess.unwant(platformIndex, deviceIndex);
    }
    boolean mine = guard.close("its MpiBuild was closed");
    PoclInProcessCompile.release(this); // once the uses have ended: none keeps a program for the root's part after it
    if (mine) {
      clReleaseCommandQueue(queue);
      clReleaseContext(context);
    }
  }
}
