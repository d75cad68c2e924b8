package org.mpibuild.spi;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.ServiceLoader;
import org.mpibuild.KernelSource;

/**
 * A compiler and loader for one kind of device, bound to this rank's device.
 *
 * <p>Backends are found through {@link BackendProvider} and {@link ServiceLoader}; the core
 * has no compile-time dependency on any of them. A backend is used by one thread at a time.
 */
public interface Backend extends AutoCloseable {

  /**
   * Returns the backend's id, written into every binary it makes, for example {@code "opencl"}.
   *
   * @return the id
   */
  String id();

  /**
   * Returns the identity of this rank's device: everything that decides whether a binary built for one
   * device loads on another (for OpenCL: platform, device, driver version).
   *
   * @return a stable, human-readable identity
   */
  String target();

  /**
   * Returns the identity and version of the compiler, for cache keys: whatever else, besides the
   * target, decides the binary (for OpenCL: platform and driver version; for nvcc: path, version, flags).
   *
   * @return a stable, human-readable identity; by default the backend id
   */
  default String compilerIdentity() {
    return id();
  }

  /**
   * Whether a build should first gather every rank's {@link #target()} and build for all of them (for
   * example one CUDA fatbin for every GPU architecture in the job). False by default: the root builds for
   * its own target.
   *
   * @return whether the protocol gathers the job's targets
   */
  default boolean buildsForJobTargets() {
    return false;
  }

  /**
   * Returns the target to build for, given the targets of every rank (only the root's own when
   * {@link #buildsForJobTargets()} is false). The result is written into the binary and the cache key.
   *
   * @param rankTargets every rank's target, by rank
   * @return the build target; by default this rank's target
   */
  default String buildTarget(List<String> rankTargets) {
    return target();
  }

  /**
   * Returns the compiler identity for building {@code buildTarget} (the compiler chosen may depend on it).
   *
   * @param buildTarget what {@link #buildTarget} returned
   * @return the identity; by default {@link #compilerIdentity()}
   */
  default String compilerIdentity(String buildTarget) {
    return compilerIdentity();
  }

  /**
   * What this rank's device cannot do of a request that passed the backend-independent checks, for example a
   * launch shape beyond its work-group limits; null if nothing. Every rank asks its backend before any compile,
   * so that every rank fails with the same {@code IllegalArgumentException} (ranks whose devices disagree are
   * named by the agreement). By default null.
   *
   * @param request a request whose shapes and names are well formed
   * @return the problem, naming the bad value, or null
   */
  default String requestProblem(KernelSource request) {
    return null;
  }

  /**
   * Compiles a request that only this rank will run (a job of one rank, or local mode): what matters is a
   * program ready here as soon as a rank that compiles for itself would have one. A backend whose binary costs
   * more than that program (PoCL's finished code is made in a process of its own) may return the program at
   * once and the binary later ({@link Compilation#later}), or made when first wanted from what the program has
   * become ({@link Compilation#whenWanted}: its program's close must then run it), for the cache; with {@code
   * needBinary} false
   * (nothing will keep it) it need make no binary at all ({@link Compilation#withoutBinary}). By default,
   * {@link #compile(KernelSource, String)}.
   *
   * @param request the checked request
   * @param buildTarget what {@link #buildTarget} returned: this rank's own target
   * @param needBinary whether the binary will be kept (in a cache)
   * @return the compilation, its program loaded here
   */
  default Compilation compileAlone(KernelSource request, String buildTarget, boolean needBinary) {
    return compile(request, buildTarget);
  }

  /**
   * Compiles for {@code buildTarget}; by default {@link #compile(KernelSource)}.
   *
   * @param request the checked request
   * @param buildTarget what {@link #buildTarget} returned
   * @return the compilation; its program is null when this rank has no device to load it on
   */
  default Compilation compile(KernelSource request, String buildTarget) {
    return compile(request);
  }

  /**
   * The parts into which a compile of {@code request} can be shared between up to {@code ranks} ranks that would
   * otherwise wait for the root: each part is compiled by one rank ({@link #compilePart}), and the root joins
   * them ({@link #joinParts}) into the binary {@link #compile} would make. The protocol asks only on a root that
   * missed every cache, for a single request that every rank loads; the first part is the root's. A part is a
   * text of the backend's own, the same on every rank of a target. Empty (by default) where the compile cannot
   * be split, or splitting would not pay.
   *
   * @param request the checked request
   * @param ranks how many ranks may take a part, the root included (at least 2)
   * @return at most {@code ranks} parts, or none
   */
  default List<String> compileParts(KernelSource request, int ranks) {
    return List.of();
  }

  /**
   * Compiles one part of {@link #compileParts}, on any rank of the target, nothing loaded.
   *
   * @param request the checked request
   * @param buildTarget the target the root builds for
   * @param part one of the parts {@link #compileParts} gave for this request
   * @return the part's binary and build log, no program
   * @throws org.mpibuild.CompileException if the compiler rejects the source
   * @throws IllegalArgumentException if an option is invalid, or the part is not one this backend makes
   */
  default Compilation compilePart(KernelSource request, String buildTarget, String part) {
    throw new UnsupportedOperationException("backend " + id() + " does not share compiles");
  }

  /**
   * Joins the parts' binaries, in the order of {@link #compileParts}, into the binary {@link #compile} would
   * make, and loads it here.
   *
   * @param request the checked request
   * @param buildTarget the target the root builds for
   * @param parts every part's compilation, in order
   * @return the loaded program, the joined binary and the first part's build log
   * @throws IllegalArgumentException if the request does not fit the program (a launch shape of a kernel it
   *     lacks), or the parts do not join
   */
  default Compilation joinParts(KernelSource request, String buildTarget, List<Compilation> parts) {
    throw new UnsupportedOperationException("backend " + id() + " does not share compiles");
  }

  /**
   * This rank is likely to compile in a later call (in a job of several ranks: rank 0, which is most programs' root,
   * and the ranks that share its compiles, on a node with a core for each of its ranks): the backend may prepare
   * now, in the time the program leaves unused, what a cold compile would otherwise pay on its path (on PoCL: a
   * compile process started ahead). Called at most once, when the instance opens, unless
   * {@code MPI_BUILD_COMPILE_AHEAD} is {@code 0}; whatever it starts ends by {@link #close}. By default nothing.
   */
  default void prepareCompiles() {}

  /**
   * Whether this rank's device can load a binary built for {@code binaryTarget}; by default when it is
   * exactly this rank's target.
   *
   * @param binaryTarget the target recorded in the binary
   * @return whether loading may be tried
   */
  default boolean canLoad(String binaryTarget) {
    return binaryTarget.equals(target());
  }

  /**
   * Compiles the request for this rank's device, makes the binary ready to load elsewhere, and keeps the
   * compiled program loaded here.
   *
   * @param request a request already checked by the core: non-empty source, valid kernel names
   * @return the loaded program, its binary and the build log
   * @throws org.mpibuild.CompileException if the compiler rejects the source
   * @throws IllegalArgumentException if an option or kernel name is invalid; the message names it
   */
  Compilation compile(KernelSource request);

  /**
   * Loads a binary made by {@link #compile} on a device of the same target.
   *
   * @param binary the binary, already checked against its length and digest
   * @param kernelNames the kernels to create
   * @return the loaded program
   * @throws RuntimeException with a message for a person if the device refuses the binary
   */
  LoadedProgram load(byte[] binary, List<String> kernelNames);

  /**
   * Loads a binary that lies in direct memory, as received: override it where the device's API takes a
   * pointer, so that the binary is never copied into the Java heap. The buffer is read-only, holds the
   * binary between its position and its limit, and is valid only during this call. By default the bytes
   * are copied into an array for {@link #load(byte[], List)}.
   *
   * @param binary the binary, already checked
   * @param kernelNames the kernels to create
   * @return the loaded program
   * @throws RuntimeException with a message for a person if the device refuses the binary
   */
  default LoadedProgram load(ByteBuffer binary, List<String> kernelNames) {
    byte[] bytes = new byte[binary.remaining()];
    binary.duplicate().get(bytes);
    return load(bytes, kernelNames);
  }

  /**
   * Releases the device context. The core closes the programs it holds first; a backend must still never
   * release a handle that something it handed out can reach: it closes what it made (programs, helpers bound
   * to its queue or stream) before it releases the context, so that their later calls throw
   * {@code IllegalStateException} instead of reaching the driver ({@link UseGuard} does this). Idempotent.
   */
  @Override
  void close();
}
