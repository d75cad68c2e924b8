package org.mpibuild.opencl;

import static org.jocl.CL.clReleaseProgram;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jocl.cl_program;
import org.mpibuild.KernelSource;
import org.mpibuild.spi.Setting;
import org.mpibuild.spi.SettingSource;
import org.mpibuild.support.BackendSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A compile with launch shapes named in the rank's own process, where nothing stands in the way: no JVM, PoCL or
 * LLVM to start, as a rank that compiles for itself pays nothing of the kind. It needs PoCL 6.0 or later, which reads
 * {@code POCL_BINARY_SPECIALIZE_WG} with {@code getenv} at each binary query (3.1 to 5.0 keep a variable's first
 * value for the life of the process: {@code pocl_runtime_config.c}, {@code find_env}), and a way to set it
 * ({@link NativeEnvironment}: Java 22 or later, native access enabled). Elsewhere, or where any step below finds
 * something it did not expect, {@link #compile} returns null and a compile process does the work, as before.
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
      "mpibuild.opencl.compileInProcess", true, "on PoCL 6.0 and later, with Java 22+ and native access enabled "
          + "(`--enable-native-access=ALL-UNNAMED`), compile a request with launch shapes in the rank's own process, "
          + "with no compile process to start; used only where it can run, else a compile process does it; `false`: "
          + "always a compile process");
  /** The first PoCL release that reads its settings at each use. */
  static final int FIRST_MAJOR = 6;
  private static final Pattern POCL_VERSION = Pattern.compile("PoCL (\\d+)\\.(\\d+)");
  private static final String VARIABLE = "POCL_BINARY_SPECIALIZE_WG";
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
    Matcher m = POCL_VERSION.matcher(platformVersion);
    if (!m.find() || Integer.parseInt(m.group(1)) < FIRST_MAJOR) {
      return "PoCL before " + FIRST_MAJOR + ".0 keeps the first value of " + VARIABLE + " for the life of the "
          + "process (platform version '" + platformVersion + "')";
    }
    if (env.containsKey(VARIABLE)) {
      return VARIABLE + " is set in this process's environment";
    }
    if ("0".equals(env.get("POCL_KERNEL_CACHE"))) {
      return "PoCL's kernel cache is off (POCL_KERNEL_CACHE=0)";
    }
    if (StandInLibrary.machine().isEmpty()) {
      return "no stand-in library for this processor (" + System.getProperty("os.arch") + ")";
    }
    return NativeEnvironment.unavailable();
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
    if (!ONE.tryLock()) {
      LOG.debug("compile in this process: another is running; a compile process builds this one");
      return null;
    }
    Path mark = null;
    Path libraries = null;
    try {
      Path top = OpenClDevices.poclCacheTop(System.getenv());
      mark = Files.createTempFile(top, ".mpi-build-", ".mark");
      libraries = Files.createTempDirectory("mpi-build-stand-ins", PosixFilePermissions.asFileAttribute(
          PosixFilePermissions.fromString("rwx------")));
      return compile(backend, request, named, top, Files.getLastModifiedTime(mark), libraries);
    } catch (IOException | UncheckedIOException e) {
      LOG.debug("compile in this process: {}; a compile process builds it", e.toString());
      return null;
    } finally {
      try {
        if (mark != null) {
          Files.deleteIfExists(mark);
        }
        BackendSupport.deleteTree(libraries);
      } catch (IOException ignored) {
        // our own temporary files; nothing else to do
      }
      ONE.unlock();
    }
  }

  private static PoclSpecialization.Result compile(OpenClBackend backend, KernelSource request,
      Map<String, Set<String>> named, Path top, FileTime since, Path libraries) throws IOException {
    String nonce = HexFormat.of().formatHex(bytes(16));
    cl_program program = backend.build(request.source() + "\n\nvoid mpi_build_compile_" + nonce + "(void) {}\n",
        request.options());
    Path dir = null;
    try {
      dir = programDirectory(top, since, ("mpi_build_compile_" + nonce).getBytes(StandardCharsets.US_ASCII));
      List<String> kernels = OpenClBackend.definedKernels(program);
      List<String> union = List.copyOf(named.values().stream().flatMap(Set::stream)
          .collect(java.util.stream.Collectors.toCollection(LinkedHashSet::new)));
      if (dir == null || (long) kernels.size() * (union.size() + 1) > PoclSpecialization.MAX_STAND_INS
          || !PoclCompileProcess.linkStandIns(dir, libraries, kernels, named, union)) {
        LOG.debug("compile in this process: {}; a compile process builds it", dir == null
            ? "its program's directory was not found in " + top : "no stand-ins for " + kernels.size() + " kernels");
        return null;
      }
      byte[] binary;
      NativeEnvironment environment = NativeEnvironment.get();
      synchronized (NativeEnvironment.LOCK) {
        environment.set(VARIABLE, String.join(",", union));
        try {
          binary = backend.programBinary(program);
        } finally {
          environment.set(VARIABLE, null);
        }
      }
      if (!top.resolve(PoclBinary.buildHash(binary)).equals(dir)) {
        LOG.debug("compile in this process: the binary's build hash {} is not the directory {}; a compile process "
            + "builds it", PoclBinary.buildHash(binary), dir);
        return null;
      }
      byte[] kept = PoclBinary.keepOnly(binary, (k, spec) -> named.getOrDefault(k, Set.of()).contains(spec));
      String missing = PoclCompileProcess.missing(kept, named);
      if (missing != null) {
        LOG.debug("compile in this process: PoCL built no function for {}; a compile process builds it", missing);
        return null;
      }
      return new PoclSpecialization.Result(PoclBinary.withBuildHash(kept, buildHash(backend.compilerIdentity(),
          request)), backend.buildLog(program));
    } finally {
      clReleaseProgram(program);
      BackendSupport.deleteTree(dir);
    }
  }

  private static byte[] bytes(int n) {
    byte[] b = new byte[n];
    RANDOM.nextBytes(b);
    return b;
  }

  /**
   * The directory of PoCL's cache ({@code TOP/XX/REST}) changed since {@code since} whose {@code program.bc} holds
   * {@code nonce}; null where there is not exactly one.
   */
  static Path programDirectory(Path top, FileTime since, byte[] nonce) throws IOException {
    List<Path> found = new ArrayList<>();
    for (Path first : recent(top, since)) {
      for (Path program : recent(first, since)) {
        Path bitcode = program.resolve("program.bc");
        if (Files.isRegularFile(bitcode, LinkOption.NOFOLLOW_LINKS) && contains(Files.readAllBytes(bitcode), nonce)) {
          found.add(program);
        }
      }
    }
    return found.size() == 1 ? found.get(0) : null;
  }

  private static List<Path> recent(Path dir, FileTime since) throws IOException {
    List<Path> out = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      for (Path p : entries) {
        if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)
            && Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS).compareTo(since) >= 0) {
          out.add(p);
        }
      }
    }
    return out;
  }

  static boolean contains(byte[] data, byte[] part) {
    outer:
    for (int i = 0; i + part.length <= data.length; i++) {
      for (int j = 0; j < part.length; j++) {
        if (data[i + j] != part[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  /**
   * The build hash for a binary of {@code request} made in this process, in PoCL's form ({@code XX/} and 37 more of
   * the letters {@code A} to {@code P}, one per half byte of a SHA-1): of the compiler's identity (PoCL's version,
   * the device, the driver), the options and the source, so that it changes wherever PoCL's own would.
   */
  static String buildHash(String compilerIdentity, KernelSource request) {
    MessageDigest sha1;
    try {
      sha1 = MessageDigest.getInstance("SHA-1");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("no SHA-1 in this JVM", e);
    }
    for (String part : List.of("mpi-build compile in process", compilerIdentity, request.options(), request.source())) {
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
