package org.mpibuild.opencl;

import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.clBuildProgram;
import static org.jocl.CL.clCreateProgramWithBinary;
import static org.jocl.CL.clReleaseProgram;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jocl.cl_device_id;
import org.jocl.cl_program;
import org.mpibuild.KernelSource;
import org.mpibuild.spi.Setting;
import org.mpibuild.spi.SettingSource;
import org.mpibuild.support.BackendSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A compile with launch shapes named in the rank's own process, where nothing stands in the way: no JVM, PoCL or
 * LLVM to start, as a rank that compiles for itself pays nothing of the kind. It needs a way to set
 * {@code POCL_BINARY_SPECIALIZE_WG}, which PoCL reads at the binary query ({@link NativeEnvironment}: Java 22 or later
 * with native access, or the environment slot {@code bin/mpi-build-rank} starts each rank with). PoCL 6.0 and later
 * read it with {@code getenv} at each query; 3.1 to 5.0 keep the first value they find for the life of the process
 * ({@code pocl_runtime_config.c}, {@code find_env}; a variable not set is not kept), so there a later compile runs here
 * only where its shapes are among those the first compile set ({@link SpecializeVariable}): every binary query of the
 * process then builds those shapes for every kernel, and the ones a request does not name for a kernel are
 * stand-ins; the others run in compile processes. Elsewhere, or where any step below
 * finds something it did not expect, {@link #compile} returns null and a compile process does the work, as before.
 *
 * <p>The request is built with a function of no use appended to its source, {@code void mpi_build_compile_NONCE(void)},
 * NONCE random: its program has a directory in PoCL's cache that no other build shares (the program's hash covers the
 * preprocessed source), found as the one new program directory whose {@code program.bc} holds the NONCE, and checked
 * against the build hash the binary then carries. The functions nobody named are linked there to stand-ins
 * ({@link PoclCompileProcess#linkStandIns}), the variable is set around the binary query, and the binary keeps the
 * named functions only. The program is released and its directory deleted, stand-ins and all: nothing ever launches
 * from it. The binary's build hash, which names the directory a loading process unpacks it into, is replaced by one
 * made of the request and the compiler ({@link #buildHash}), so that every job's binary of the request shares one
 * directory in each rank's cache instead of leaving one per job.
 */
final class PoclInProcessCompile {
  private static final Logger LOG = LoggerFactory.getLogger(PoclInProcessCompile.class);
  /** Whether a compile with launch shapes may run in the rank's process where it can. */
  static final Setting<Boolean> ON = Setting.flag("MPI_BUILD_OPENCL_COMPILE_IN_PROCESS",
      "mpibuild.opencl.compileInProcess", true, "compile a request with launch shapes in the rank's own process, "
          + "with no compile process to start, where it can set PoCL's variables: Java 22+ with native access "
          + "(`--enable-native-access=ALL-UNNAMED`), or a rank started by `bin/mpi-build-rank` (an environment slot); "
          + "on PoCL before 6.0, those whose shapes are among the process's first such compile's; elsewhere a compile "
          + "process does it; "
          + "`false`: always a compile process");
  /** One compile at a time here: a second, meanwhile, goes to a compile process. */
  private static final ReentrantLock ONE = new ReentrantLock();
  private static final SecureRandom RANDOM = new SecureRandom();

  private PoclInProcessCompile() {}

  /** {@link #unavailable(String, boolean, Map)} with this process's setting and environment. */
  static String unavailable(String platformVersion) {
    return unavailable(platformVersion, ON.read(SettingSource.ofProcess()), System.getenv());
  }

  /**
   * Why a compile with launch shapes cannot run in this process on the platform of {@code platformVersion}; null
   * where it can ({@code on}: the setting {@link #ON}).
   */
  static String unavailable(String platformVersion, boolean on, Map<String, String> env) {
    if (!on) {
      return ON.variable() + "=false";
    }
    if (!SpecializeVariable.POCL_VERSION.matcher(platformVersion).find()) {
      return "the platform version '" + platformVersion + "' names no PoCL release";
    }
    String directory = PoclProgramDirectory.unusable(env);
    return directory != null ? directory : NativeEnvironment.unavailable();
  }

  /**
   * {@code request} built on {@code backend}'s device in this process: a binary with the functions of the (kernel,
   * specialization) pairs {@code named} and no others; null where this process cannot make it (said at DEBUG: the
   * caller then uses a compile process).
   *
   * @throws org.mpibuild.CompileException with the build log if the compiler rejects the source
   * @throws IllegalArgumentException if the options are invalid
   */
  static PoclSpecialization.Result compile(OpenClBackend backend, KernelSource request, Map<String, Set<String>> named) {
    return compile(backend, request, named, null);
  }

  /**
   * Part {@code part} of a shared compile ({@link PoclSpecialization#parts}), as {@link #compile} builds a request:
   * on the root, from the program {@link #shareFrontEnd} built; on another rank, from the root's front end where
   * the part carries it (no front end here); else from the source.
   */
  static PoclSpecialization.Result compilePart(OpenClBackend backend, KernelSource request, String part,
      Map<String, Set<String>> named) {
    Built retained = RETAINED.remove(backend);
    if (retained != null && retained.part().equals(part) && retained.request().equals(request)) {
      return compile(backend, request, named, retained);
    }
    if (retained != null) {
      retained.release();
    }
    return compile(backend, request, named, FrontEnd.of(part));
  }

  /**
   * The parts of a shared compile, each but the root's (the first) with the root's front end: the request is compiled
   * here now ({@code clCompileProgram}), the object's bitcode added to the other parts ({@link FrontEnd}) and a program
   * built from it kept for the root's part ({@link #compilePart}), so that the other ranks generate code without a
   * front end of their own. The parts as they were where it cannot be, none where the source does not compile (the
   * root then compiles alone and reports the error as any compile does); each said at DEBUG.
   *
   * <p>The object, not the {@code program.bc} of a built program: PoCL links its kernel library into a program built
   * from LLVM bitcode, and {@code program.bc} holds it already; PoCL 3.1's binary query of such a program crashed the
   * process (a work-group pass finds no {@code _local_id_x} after the second link).
   */
  static List<String> shareFrontEnd(OpenClBackend backend, KernelSource request, List<String> parts) {
    // 2 parts only: then the one other rank with the root's nonce in a cache it shares is the root, told by name; and
    // only where the root's part will compile here (not if PoCL keeps a value without its shapes)
    if (parts.size() != 2
        || SpecializeVariable.refused(backend, PoclSpecialization.union(PoclSpecialization.part(request, parts.get(0))))
        != null || !ONE.tryLock()) {
      return parts;
    }
    Path mark = null;
    try {
      Path top = OpenClDevices.poclCacheTop(System.getenv());
      mark = Files.createTempFile(top, ".mpi-build-", ".mark");
      FileTime since = Files.getLastModifiedTime(mark);
      Built compiled = Built.fromSource(backend, request, top, since, "", true);
      if (compiled == null) {
        return parts;
      }
      FrontEnd object;
      try {
        object = new FrontEnd(top.relativize(compiled.dir()).toString(), compiled.nonce(),
            Files.readAllBytes(compiled.dir().resolve("program.bc")));
      } finally {
        compiled.release(); // the object's directory too: nothing builds from it but the bitcode read here
      }
      Built built = Built.fromFrontEnd(backend, request, top, since, object);
      if (built == null) {
        return parts;
      }
      Built old = RETAINED.put(backend, built.asRoots(compiled.log(), parts.get(0)));
      if (old != null) {
        old.release();
      }
      return List.of(parts.get(0),
          parts.get(1) + FrontEnd.line(top.relativize(built.dir()).toString(), object.nonce(), object.bitcode()));
    } catch (org.mpibuild.CompileException | IllegalArgumentException e) {
      // the compile would fail however it is dealt: the root compiles alone, and says why as any compile does
      LOG.debug("front end shared from this process: {}; the root compiles alone", e.toString());
      return List.of();
    } catch (IOException | RuntimeException e) {
      LOG.debug("front end shared from this process: {}; each part's rank builds its own", e.toString());
      return parts;
    } finally {
      PoclProgramDirectory.deleteQuietly(mark, null);
      ONE.unlock();
    }
  }

  /** Releases what {@link #shareFrontEnd} kept for {@code backend}, if anything. */
  static void release(OpenClBackend backend) {
    Built retained = RETAINED.remove(backend);
    if (retained != null) {
      retained.release();
    }
  }

  /** The program the root built in {@link #shareFrontEnd}, by backend, until its part is compiled. */
  private static final Map<OpenClBackend, Built> RETAINED = new java.util.concurrent.ConcurrentHashMap<>();

  /** {@link #compile} from {@code built} where it is not null, else from {@code frontEnd}, else from the source. */
  private static PoclSpecialization.Result compile(OpenClBackend backend, KernelSource request,
      Map<String, Set<String>> named, Object from) {
    String closed = SpecializeVariable.refused(backend, PoclSpecialization.union(named));
    if (closed != null || !ONE.tryLock()) {
      LOG.debug("compile in this process: {}; a compile process builds this one",
          closed != null ? closed : "another is running");
      if (from instanceof Built b) {
        b.release();
      }
      return null;
    }
    Path mark = null;
    Path libraries = null;
    Built built = from instanceof Built b ? b : null;
    try {
      Path top = OpenClDevices.poclCacheTop(System.getenv());
      mark = Files.createTempFile(top, ".mpi-build-", ".mark");
      // PoCL loads them, so under its cache, where it loads its own code from (a temporary directory may be noexec)
      libraries = Files.createTempDirectory(top, ".mpi-build-stand-ins-", PosixFilePermissions.asFileAttribute(
          PosixFilePermissions.fromString("rwx------")));
      FileTime since = Files.getLastModifiedTime(mark);
      long start = System.nanoTime();
      if (built == null) {
        built = from instanceof FrontEnd f ? Built.fromFrontEnd(backend, request, top, since, f)
            : Built.fromSource(backend, request, top, since, "", false); // a compile error or bad options: thrown
      }
      return built == null ? null : finish(backend, request, named, built, libraries, start);
    } catch (IOException | UncheckedIOException | IllegalStateException e) {
      LOG.debug("compile in this process: {}; a compile process builds it", e.toString());
      return null;
    } catch (IllegalArgumentException e) {
      if (built == null) {
        throw e; // the options, as the compiler refused them
      }
      LOG.debug("compile in this process: {}; a compile process builds it", e.toString());
      return null;
    } finally {
      if (built != null) {
        built.release();
      }
      PoclProgramDirectory.deleteQuietly(mark, libraries);
      ONE.unlock();
    }
  }

  /** The binary of {@code built}'s program with the functions {@code named} names and no others; null if it cannot. */
  private static PoclSpecialization.Result finish(OpenClBackend backend, KernelSource request,
      Map<String, Set<String>> named, Built built, Path libraries, long start) throws IOException {
    long buildEnd = System.nanoTime();
    List<String> kernels = OpenClBackend.definedKernels(built.program());
    List<String> union = PoclSpecialization.union(named);
    // every kernel gets each of these: stand-ins where it did not name one (a part: the other parts' pairs too)
    List<String> shapes = SpecializeVariable.shapesToSet(backend, union,
        PoclSpecialization.union(PoclSpecialization.perKernel(request.launchShapes())));
    if ((long) kernels.size() * (shapes.size() + 1) > PoclSpecialization.MAX_STAND_INS
        || !PoclCompileProcess.linkStandIns(built.dir(), libraries, kernels, named, shapes)) {
      LOG.debug("compile in this process: no stand-ins for {} kernels; a compile process builds it", kernels.size());
      return null;
    }
    byte[] binary;
    long query;
    NativeEnvironment environment = NativeEnvironment.get();
    synchronized (NativeEnvironment.LOCK) { // every binary query of this process holds it (OpenClBackend)
      String refused = SpecializeVariable.refused(backend, union); // the variable may have been left set meanwhile
      if (refused != null) {
        LOG.debug("compile in this process: {}; a compile process builds it", refused);
        return null;
      }
      SpecializeVariable.set(environment, shapes); // else nothing set: thrown, and a compile process builds it
      try {
        query = System.nanoTime();
        binary = backend.programBinary(built.program());
        query = System.nanoTime() - query;
      } finally {
        SpecializeVariable.takeBack(environment);
      }
    }
    String hash = PoclBinary.buildHash(binary);
    if (!built.top().resolve(hash).equals(built.dir())) {
      LOG.debug("compile in this process: the binary's build hash {} is not the directory {}; a compile process "
          + "builds it", hash, built.dir());
      return null;
    }
    byte[] kept = PoclBinary.keepNamed(binary, named);
    String missing = PoclCompileProcess.missing(kept, named);
    if (missing != null) {
      LOG.debug("compile in this process: PoCL built no function for {}; a compile process builds it", missing);
      return null;
    }
    LOG.debug("compiled in this process{}: {} kernels, {} named functions (build {} ms, stand-ins {} ms, binary {} ms)",
        built.fromFrontEnd() ? " from the root's front end" : "", kernels.size(),
        named.values().stream().mapToInt(Set::size).sum(), (buildEnd - start) / 1_000_000,
        (System.nanoTime() - buildEnd - query) / 1_000_000, query / 1_000_000);
    return new PoclSpecialization.Result(PoclBinary.withBuildHash(kept, buildHash(backend, kept, request)),
        built.log());
  }

  /**
   * A program built here for a compile, with its directory in PoCL's cache under {@code top} (this build's own,
   * proven by the nonce), its build log, the part and request it was built for ({@code ""}: a whole request), and
   * whether it was built from the root's front end.
   */
  record Built(cl_program program, Path top, Path dir, String nonce, String log, String part,
      KernelSource request, boolean fromFrontEnd) {
    /**
     * The request's source with a function named by a new nonce, built (with {@code compileOnly}, compiled only: its
     * object, unlinked); null where its directory is not found.
     */
    static Built fromSource(OpenClBackend backend, KernelSource request, Path top, FileTime since, String part,
        boolean compileOnly) throws IOException {
      String nonce = HexFormat.of().formatHex(bytes(16));
      String function = "void " + NONCE_FUNCTION + nonce + "(void)"; // declared first: no warning to make an error
      cl_program program = backend.build(request.source() + "\n\n" + function + ";\n" + function + " {}\n",
          request.options(), compileOnly);
      return found(program, request, top, since, nonce, null, backend.buildLog(program), part, false);
    }

    /** This program as the root's part {@code part} uses it, with the build log of the root's front end. */
    Built asRoots(String frontEndLog, String rootsPart) {
      return new Built(program, top, dir, nonce, frontEndLog, rootsPart, request, false);
    }

    /**
     * The root's object (its front end's LLVM bitcode, which PoCL takes as a binary) built here, with no front end and
     * with an option of no use that gives it a directory of its own; null where it does not build or its directory is
     * not found.
     */
    static Built fromFrontEnd(OpenClBackend backend, KernelSource request, Path top, FileTime since, FrontEnd f)
        throws IOException {
      int[] err = new int[1];
      cl_device_id[] device = {backend.device()};
      cl_program program = clCreateProgramWithBinary(backend.context(), 1, device, new long[] {f.bitcode().length},
          new byte[][] {f.bitcode()}, null, err);
      if (err[0] != CL_SUCCESS) {
        LOG.debug("compile in this process: the root's front end does not load ({}); from the source", err[0]);
        return null;
      }
      String options = request.options() + " -D MPI_BUILD_PART_" + HexFormat.of().formatHex(bytes(8));
      if (clBuildProgram(program, 1, device, options.strip(), null, null) != CL_SUCCESS) {
        clReleaseProgram(program);
        LOG.debug("compile in this process: the root's front end does not build; from the source");
        return null;
      }
      return found(program, request, top, since, f.nonce(), top.resolve(f.rootDirectory()), "", "", true);
    }

    private static Built found(cl_program program, KernelSource request, Path top, FileTime since, String nonce,
        Path not, String log, String part, boolean fromFrontEnd) throws IOException {
      Path dir;
      try {
        dir = PoclProgramDirectory.find(top, since, (NONCE_FUNCTION + nonce).getBytes(StandardCharsets.US_ASCII), not);
      } catch (IOException | RuntimeException e) {
        clReleaseProgram(program);
        throw e;
      }
      if (dir == null) {
        clReleaseProgram(program);
        LOG.debug("compile in this process: its program's directory was not found in {}; a compile process builds it",
            top);
        return null;
      }
      return new Built(program, top, dir, nonce, log, part, request, fromFrontEnd);
    }

    /** Releases the program and deletes its directory, stand-ins and all: nothing launches from it. */
    void release() {
      clReleaseProgram(program);
      PoclProgramDirectory.deleteQuietly(null, dir);
    }
  }

  /** The name, less its nonce, of the function of no use a source is built with here. */
  private static final String NONCE_FUNCTION = "mpi_build_compile_";

  /**
   * The root's front end as the other parts of a shared compile carry it: a line {@code #front-end}, the root's
   * directory of the program (so that a rank sharing its PoCL cache tells it from its own), the nonce, and the
   * object's bitcode ({@link #shareFrontEnd}) in base64. {@link PoclSpecialization#pairs} skips it.
   */
  record FrontEnd(String rootDirectory, String nonce, byte[] bitcode) {
    static final String PREFIX = "#front-end\t";
    private static final Pattern LINE = Pattern.compile(
        "^#front-end\t([A-P]{2}/[A-P]{37})\t([0-9a-f]{32})\t([A-Za-z0-9+/=]+)$", Pattern.MULTILINE);

    static String line(String rootDirectory, String nonce, byte[] bitcode) {
      return PREFIX + rootDirectory + "\t" + nonce + "\t" + java.util.Base64.getEncoder().encodeToString(bitcode) + "\n";
    }

    /** The front end {@code part} carries; null where it carries none, or none that reads. */
    static FrontEnd of(String part) {
      Matcher m = LINE.matcher(part);
      if (!m.find()) {
        return null;
      }
      try {
        return new FrontEnd(m.group(1), m.group(2), java.util.Base64.getDecoder().decode(m.group(3)));
      } catch (IllegalArgumentException e) {
        return null;
      }
    }
  }

  private static byte[] bytes(int n) {
    byte[] b = new byte[n];
    RANDOM.nextBytes(b);
    return b;
  }

  /**
   * The build hash for a binary of {@code request} made in this process, in PoCL's form ({@code XX/} and 37 more of
   * the letters {@code A} to {@code P}, one per half byte of a SHA-1): of {@code compiler} (PoCL's version and
   * driver, the device by name and by the binary's device id, PoCL's hash of its target triple and processor), the
   * options and the source, so that it changes wherever PoCL's own would: a process that loads the binary keeps
   * whatever files that directory already holds.
   */
  static String buildHash(OpenClBackend backend, byte[] binary, KernelSource request) {
    return buildHash(backend.compilerIdentity() + "\0" + backend.target() + "\0" + PoclBinary.deviceId(binary), request);
  }

  /** {@link #buildHash(OpenClBackend, byte[], KernelSource)} of the compiler so described. */
  static String buildHash(String compiler, KernelSource request) {
    MessageDigest sha1;
    try {
      sha1 = MessageDigest.getInstance("SHA-1");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("no SHA-1 in this JVM", e);
    }
    for (String part : List.of("mpi-build compile in process", compiler, request.options(), request.source())) {
      sha1.update(part.getBytes(StandardCharsets.UTF_8));
      sha1.update((byte) 0);
    }
    StringBuilder letters = new StringBuilder();
    for (byte b : sha1.digest()) {
      letters.append((char) ('A' + ((b >> 4) & 15))).append((char) ('A' + (b & 15)));
    }
    return letters.substring(0, 2) + "/" + letters.substring(2, 39);
  }
}
