package org.mpibuild.opencl;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import org.mpibuild.KernelSource;
import org.mpibuild.spi.Compilation;
import org.mpibuild.support.BackendSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The finished binary of a request only this rank runs, taken from the program its kernels ran on: no compile
 * but the rank's own. On PoCL a kernel's first launch at a shape generates that shape's work-group function into
 * the program's directory in PoCL's cache, as a rank that compiles for itself pays; once the kernels have launched
 * at their named shapes, the program's binary holds those functions. The binary query also makes each kernel's
 * generic function, which no launch runs while work-group specialization is on (PoCL's default:
 * {@code pocl_check_kernel_dlhandle_cache} at v3.1 specializes every launch unless
 * {@code POCL_WORK_GROUP_SPECIALIZATION} is off), so a {@link StandInLibrary} takes its place in that directory, and
 * the query packs what is there: milliseconds.
 *
 * <p>The program is built with a function of no use named by a nonce, as {@link PoclInProcessCompile} builds one,
 * so that its directory is provably its own. Its binary is made when first wanted ({@link Compilation#whenWanted}:
 * a task not yet run): at the kernel's close, before its program is released ({@code MpiBuild.close()} closes its
 * kernels first), or when {@code Kernel.binaryData()} asks. The task only packs what the program holds; a named
 * function still missing then (its shape never launched, or launched at another global size or offset) fails it,
 * and the core compiles the request instead, within the compile timeout, off the closing thread. The directory is
 * deleted once the program is released (at the JVM's exit where queued commands still held it then).
 */
final class PoclLaunchedBinary {
  private static final Logger LOG = LoggerFactory.getLogger(PoclLaunchedBinary.class);
  /** The directories of released programs that queued commands still held: deleted at the JVM's exit. */
  private static final Set<Path> AT_EXIT = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private static final java.util.concurrent.atomic.AtomicBoolean EXIT_HOOK = new java.util.concurrent.atomic.AtomicBoolean();

  private PoclLaunchedBinary() {}

  /** Why the binary cannot come from the launched program here; null where it can. */
  static String unavailable(OpenClBackend backend, Map<String, String> env) {
    if (env.containsKey("POCL_WORK_GROUP_SPECIALIZATION")) {
      return "POCL_WORK_GROUP_SPECIALIZATION is set (a launch could then run a generic function)";
    }
    String directory = PoclProgramDirectory.unusable(env);
    if (directory != null) {
      return directory;
    }
    // before 6.0 PoCL keeps the first value it read: one set for a compile here would name functions at the query
    return SpecializeVariable.closed(backend);
  }

  /**
   * {@code request} built here, its kernels ready, its binary a task for when it is first wanted; null where that
   * cannot be (said at DEBUG: the caller builds as before).
   *
   * @throws org.mpibuild.CompileException with the build log if the compiler rejects the source
   * @throws IllegalArgumentException if the options are invalid
   */
  static Compilation compile(OpenClBackend backend, KernelSource request) {
    String why = unavailable(backend, System.getenv());
    if (why != null) {
      LOG.debug("binary from the launched program: {}", why);
      return null;
    }
    PoclInProcessCompile.Built built;
    Path mark = null;
    try {
      Path top = OpenClDevices.poclCacheTop(System.getenv());
      mark = Files.createTempFile(top, ".mpi-build-", ".mark");
      built = PoclInProcessCompile.Built.fromSource(backend, request, top, Files.getLastModifiedTime(mark), "",
          false);
    } catch (IOException | IllegalStateException | java.io.UncheckedIOException e) {
      // a compile error (CompileException) or invalid options (IllegalArgumentException) reach the caller
      LOG.debug("binary from the launched program: {}", e.toString());
      return null;
    } finally {
      PoclProgramDirectory.deleteQuietly(mark, null);
    }
    if (built == null) {
      return null;
    }
    OpenClKernel kernels;
    try {
      kernels = backend.createKernels(built.program(), request.kernelNames());
    } catch (RuntimeException e) {
      built.release();
      throw e;
    }
    try {
      OpenClBackend.finished(request, kernels, null, built.log()); // which releases them if it refuses them
    } catch (RuntimeException e) {
      delete(built.dir());
      throw e;
    }
    FutureTask<byte[]> binary = new FutureTask<>(() -> binary(backend, request, built));
    kernels.beforeRelease(binary, built.dir());
    return Compilation.whenWanted(kernels, built.log(), binary);
  }

  /**
   * The launched program's binary with the named functions; thrown where one is missing, or where the program's
   * binary cannot be taken as it is (the core then compiles the request).
   */
  private static byte[] binary(OpenClBackend backend, KernelSource request, PoclInProcessCompile.Built built)
      throws IOException {
    Map<String, Set<String>> named = PoclSpecialization.perKernel(request.launchShapes());
    String closed = SpecializeVariable.closed(backend); // seen early: no stand-ins written for nothing
    if (closed != null) {
      throw new IllegalStateException(closed);
    }
    long start = System.nanoTime();
    Path libraries = Files.createTempDirectory(built.top(), ".mpi-build-stand-ins-",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    byte[] kept;
    try {
      List<String> kernels = OpenClBackend.definedKernels(built.program());
      if (!PoclCompileProcess.linkStandIns(built.dir(), libraries, kernels, Map.of(), List.of())) {
        throw new IllegalStateException("no stand-in library for this processor");
      }
      byte[] binary;
      synchronized (NativeEnvironment.LOCK) { // which a compile here holds while it sets what PoCL may keep
        closed = SpecializeVariable.closed(backend);
        if (closed != null) {
          throw new IllegalStateException(closed);
        }
        binary = backend.programBinary(built.program());
      }
      if (!built.top().resolve(PoclBinary.buildHash(binary)).equals(built.dir())) {
        throw new IllegalStateException("the binary's build hash is not its program's directory " + built.dir());
      }
      kept = PoclBinary.keepNamed(binary, named);
    } finally {
      BackendSupport.deleteTree(libraries); // read at the query only: PoCL keeps the binary it packed
    }
    String missing = PoclCompileProcess.missing(kept, named);
    if (missing != null) {
      throw new IllegalStateException("no function for " + missing + " (not launched at that shape)");
    }
    LOG.debug("binary from the launched program: {} named functions in {} ms",
        named.values().stream().mapToInt(Set::size).sum(), (System.nanoTime() - start) / 1_000_000);
    return PoclBinary.withBuildHash(kept, PoclInProcessCompile.buildHash(backend, kept, request));
  }

  /** {@code program}'s reference count (OpenCL's, "for debugging"; here: whether ours is the last); -1 if unknown. */
  static int referenceCount(org.jocl.cl_program program) {
    int[] count = new int[1];
    int rc = org.jocl.CL.clGetProgramInfo(program, org.jocl.CL.CL_PROGRAM_REFERENCE_COUNT, org.jocl.Sizeof.cl_uint,
        org.jocl.Pointer.to(count), null);
    return rc == org.jocl.CL.CL_SUCCESS ? count[0] : -1;
  }

  /**
   * Deletes, at the JVM's exit, the directory of a program released while commands still held it (a program never
   * released keeps its directory: its launches may still load from it while the JVM exits).
   */
  static void deleteAtExit(Path directory) {
    AT_EXIT.add(directory);
    if (EXIT_HOOK.compareAndSet(false, true)) {
      try {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> AT_EXIT.forEach(PoclLaunchedBinary::deleteNow),
            "mpi-build-pocl-launched-exit"));
      } catch (IllegalStateException exiting) {
        // the JVM is exiting already
      }
    }
  }

  /**
   * Runs {@code binary} if nobody has, and waits for it, interrupted or not, so that the program it reads is not
   * released under it (nothing cancels it: {@code BinaryFill} waits for such a task without a timeout); its failure
   * is the binary's, said where it is awaited.
   */
  static void settle(FutureTask<byte[]> binary) {
    binary.run();
    boolean interrupted = false;
    while (true) {
      try {
        binary.get();
        break;
      } catch (ExecutionException | java.util.concurrent.CancellationException e) {
        break; // the pending envelope reports it (BinaryFill)
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** Deletes a released program's directory in PoCL's cache: its own, by its nonce; nothing loads from it again. */
  static void delete(Path directory) {
    AT_EXIT.remove(directory);
    deleteNow(directory);
  }

  private static void deleteNow(Path directory) {
    try {
      BackendSupport.deleteTree(directory);
    } catch (IOException e) {
      LOG.debug("the directory {} of a released program is left: {}", directory, e.toString());
    }
  }
}
