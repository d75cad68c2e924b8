package org.mpibuild.opencl;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.mpibuild.support.BackendSupport;

/**
 * A program's directory in PoCL's kernel cache, found by what only its build can hold ({@link PoclInProcessCompile}):
 * a nonce in its {@code program.bc}. PoCL does not say where it put a program; the cache is {@code TOP/XX/REST},
 * {@code XX/REST} the program's build hash.
 */
final class PoclProgramDirectory {
  private PoclProgramDirectory() {}

  /**
   * Why this process cannot take a binary from a program's directory in PoCL's cache, stand-ins linked there
   * ({@link PoclInProcessCompile}, {@link PoclLaunchedBinary}); null where it can.
   */
  static String unusable(java.util.Map<String, String> env) {
    if (env.containsKey("POCL_BINARY_SPECIALIZE_WG")) {
      return "POCL_BINARY_SPECIALIZE_WG is set in this process's environment";
    }
    if ("0".equals(env.get("POCL_KERNEL_CACHE"))) {
      return "PoCL's kernel cache is off (POCL_KERNEL_CACHE=0)";
    }
    if (StandInLibrary.machine().isEmpty()) {
      return "no stand-in library for this processor (" + System.getProperty("os.arch") + ")";
    }
    return null;
  }

  /** Deletes our own {@code file} and {@code tree} (either may be null), saying nothing if it cannot. */
  static void deleteQuietly(Path file, Path tree) {
    try {
      if (file != null) {
        Files.deleteIfExists(file);
      }
      BackendSupport.deleteTree(tree);
    } catch (IOException | java.io.UncheckedIOException ignored) {
      // our own temporary files; nothing else to do
    }
  }

  /**
   * The directory of PoCL's cache ({@code TOP/XX/REST}) changed since {@code since} whose {@code program.bc} holds
   * {@code nonce}, other than {@code not} (null: none); null where there is not exactly one.
   */
  static Path find(Path top, FileTime since, byte[] nonce, Path not) throws IOException {
    List<Path> found = new ArrayList<>();
    for (Path first : recent(top, since, FIRST)) {
      for (Path program : recent(first, since, REST)) {
        Path bitcode = program.resolve("program.bc");
        try {
          if (!program.equals(not) && Files.isRegularFile(bitcode, LinkOption.NOFOLLOW_LINKS)
              && contains(Files.readAllBytes(bitcode), nonce)) {
            found.add(program);
          }
        } catch (NoSuchFileException e) {
          // deleted meanwhile by the process that built it: not this build's, whose directory stays
        }
      }
    }
    return found.size() == 1 ? found.get(0) : null;
  }

  /** The names of PoCL's program directories, {@code XX/REST}: a build hash, a letter A to P per half byte. */
  private static final Pattern FIRST = Pattern.compile("[A-P]{2}");
  private static final Pattern REST = Pattern.compile("[A-P]{37}");

  /** The directories in {@code dir} named as {@code name} says and changed since {@code since}; none if it is gone. */
  private static List<Path> recent(Path dir, FileTime since, Pattern name) throws IOException {
    List<Path> out = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      for (Path p : entries) {
        try {
          if (name.matcher(p.getFileName().toString()).matches() && Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)
              && Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS).compareTo(since) >= 0) {
            out.add(p);
          }
        } catch (NoSuchFileException e) {
          // deleted meanwhile: not this build's
        }
      }
    } catch (NoSuchFileException e) {
      // deleted meanwhile (another build's directory, in a cache ranks share): not this build's
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
}
