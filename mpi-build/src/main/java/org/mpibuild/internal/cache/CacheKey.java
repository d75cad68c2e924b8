package org.mpibuild.internal.cache;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.mpibuild.KernelSource;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.spi.Backend;

/**
 * The cache key: SHA-256 over a canonical serialization of everything that changes the binary, and
 * nothing else (no rank, no device ordinal, no time).
 *
 * <p>Serialization, in this order, each field as {@code name NUL decimal-length NUL bytes}:
 * <ol>
 *   <li>{@code key-format}: this layout's version ({@value #KEY_FORMAT}) and the envelope format version;
 *   <li>{@code backend}: the backend id;
 *   <li>{@code compiler}: the compiler's identity and version ({@link Backend#compilerIdentity()});
 *   <li>{@code target}: the exact target ({@link Backend#target()});
 *   <li>{@code source}: the source, UTF-8;
 *   <li>{@code options}: the build options (defines included), as given;
 *   <li>{@code kernels}: the requested kernel names, joined by newlines;
 *   <li>for every {@code #include} reached from the source, depth first, each file once:
 *       {@code include} (the spelling, then a newline and the resolved path, or {@code unresolved}) and,
 *       when resolved, {@code header} (the file's bytes).
 * </ol>
 * Includes are resolved as the compiler does: a quoted include first next to the including header, then
 * in the {@code -I} directories of the options, in order. An include the scan cannot follow, a computed one
 * ({@code #define HDR "k.h"} then {@code #include HDR}), is never guessed at: every file under the
 * {@code -I} directories then enters the key ({@code include-tree}), and without such directories (or with
 * more than {@value #MAX_TREE_FILES} files there) the request is not cached at all ({@link Uncacheable}).
 */
public final class CacheKey {
  static final int KEY_FORMAT = 1;
  private static final Pattern INCLUDE = Pattern.compile("^\\s*#\\s*include\\s*([<\"])([^>\"]+)[>\"]", Pattern.MULTILINE);
  private static final Pattern COMPUTED_INCLUDE = Pattern.compile("^\\s*#\\s*include\\s+(?![<\"])(\\S+)",
      Pattern.MULTILINE);
  static final int MAX_TREE_FILES = 10_000;
  /** Marks, in the set of files seen, that the include tree is already in the key (never a real header). */
  private static final Path TREE = Path.of("/dev/null/mpi-build-include-tree");
  private static final Pattern INCLUDE_DIR = Pattern.compile("-I\\s*(\"[^\"]*\"|'[^']*'|\\S+)");

  private CacheKey() {}

  /**
   * The key of {@code request} built by {@code backend} for this rank's own target, as 64 lowercase hex
   * digits. Collective builds use {@link #of(KernelSource, String, String, String)} with the job's target.
   */
  public static String of(KernelSource request, Backend backend) {
    String target = backend.buildTarget(List.of(backend.target()));
    return of(request, backend.id(), backend.compilerIdentity(target), target);
  }

  /** The key of {@code request} built by backend {@code backend} with {@code compiler} for {@code target}. */
  public static String of(KernelSource request, String backend, String compiler, String target) {
    MessageDigest md;
    try {
      md = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    field(md, "key-format", KEY_FORMAT + "/" + Envelope.FORMAT_VERSION);
    field(md, "backend", backend);
    field(md, "compiler", compiler);
    field(md, "target", target);
    field(md, "source", request.source());
    field(md, "options", request.options());
    field(md, "kernels", String.join("\n", request.kernelNames()));
    if (!request.launchShapes().isEmpty()) { // keys of requests without shapes stay as they were
      field(md, "launch-shapes", request.launchShapes().toString());
    }
    List<Path> dirs = includeDirs(request.options());
    includes(md, request.source(), null, dirs, new HashSet<>());
    return HexFormat.of().formatHex(md.digest());
  }

  static List<Path> includeDirs(String options) {
    List<Path> dirs = new ArrayList<>();
    Matcher m = INCLUDE_DIR.matcher(options);
    while (m.find()) {
      String d = m.group(1);
      if (d.length() >= 2 && (d.startsWith("\"") || d.startsWith("'"))) {
        d = d.substring(1, d.length() - 1);
      }
      dirs.add(Path.of(d).toAbsolutePath().normalize());
    }
    return dirs;
  }

  /** A request whose dependencies the key cannot cover: it is built, never cached. */
  public static final class Uncacheable extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Uncacheable(String message) {
      super(message);
    }
  }

  private static void includes(MessageDigest md, String text, Path from, List<Path> dirs, Set<Path> seen) {
    Matcher computed = COMPUTED_INCLUDE.matcher(text);
    if (computed.find() && seen.add(TREE)) {
      includeTree(md, computed.group(1), dirs);
    }
    Matcher m = INCLUDE.matcher(text);
    while (m.find()) {
      String name = m.group(2).trim();
      Path found = resolve(name, m.group(1).equals("\"") ? from : null, dirs);
      if (found == null) {
        field(md, "include", name + "\nunresolved");
        continue;
      }
      if (!seen.add(found)) {
        continue;
      }
      byte[] bytes;
      try {
        bytes = Files.readAllBytes(found);
      } catch (IOException e) {
        field(md, "include", name + "\nunreadable " + found);
        continue;
      }
      field(md, "include", name + "\n" + found);
      field(md, "header", bytes);
      includes(md, new String(bytes, StandardCharsets.UTF_8), found.getParent(), dirs, seen);
    }
  }

  /** Every file under the include directories, in a fixed order, for a computed include. */
  private static void includeTree(MessageDigest md, String spelling, List<Path> dirs) {
    if (dirs.isEmpty()) {
      throw new Uncacheable("#include " + spelling + " is computed, and without -I directories the files it may "
          + "name cannot be known");
    }
    List<Path> files = new ArrayList<>();
    for (Path dir : dirs) {
      try (Stream<Path> s = Files.walk(dir)) {
        s.filter(Files::isRegularFile).sorted().forEach(files::add);
      } catch (IOException | UncheckedIOException e) {
        throw new Uncacheable("#include " + spelling + " is computed, and the include directory " + dir
            + " cannot be read (" + e.getMessage() + ")");
      }
      if (files.size() > MAX_TREE_FILES) {
        throw new Uncacheable("#include " + spelling + " is computed, and the include directories hold more than "
            + MAX_TREE_FILES + " files");
      }
    }
    field(md, "include-tree", spelling);
    for (Path f : files) {
      try {
        field(md, "tree-file", f.toString());
        field(md, "header", Files.readAllBytes(f));
      } catch (IOException e) {
        field(md, "tree-file", f + "\nunreadable");
      }
    }
  }

  private static Path resolve(String name, Path nextTo, List<Path> dirs) {
    List<Path> candidates = new ArrayList<>();
    if (nextTo != null) {
      candidates.add(nextTo);
    }
    candidates.addAll(dirs);
    for (Path dir : candidates) {
      Path p = dir.resolve(name).normalize();
      if (Files.isRegularFile(p)) {
        try {
          return p.toRealPath();
        } catch (IOException e) {
          return p;
        }
      }
    }
    return null;
  }

  private static void field(MessageDigest md, String name, String value) {
    field(md, name, value.getBytes(StandardCharsets.UTF_8));
  }

  private static void field(MessageDigest md, String name, byte[] value) {
    md.update((name + "\0" + value.length + "\0").getBytes(StandardCharsets.UTF_8));
    md.update(value);
  }
}
