package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 41: a job of one rank must not be slower than doing nothing, and a new JVM pays for every bootstrap method
 * the library's first build runs. javac compiles {@code "a" + b} to an {@code invokedynamic} of
 * {@code StringConcatFactory} by default, and each new shape of concatenation spins method handles and classes at its
 * first use (about a hundred classes, and their compiles, on a one-rank build). The build compiles every module with
 * {@code -XDstringConcat=inline} (the root {@code pom.xml}), so that concatenation is plain {@code StringBuilder}
 * code; this test fails if a shipped class still bootstraps one.
 */
class StartupCostTest {
  private static final Path REPO = Path.of(System.getProperty("mpibuild.it.repo", "..")).toAbsolutePath().normalize();
  /** The modules whose classes reach users' class paths (the library, its plug-ins, the command line, examples). */
  private static final List<String> SHIPPED = List.of("mpi-build", "streams", "backends/opencl", "backends/cuda",
      "bindings/mpijava", "bindings/ffm", "cli", "examples");

  @Test
  void noShippedClassBootstrapsAStringConcatenation() throws IOException {
    List<String> found = new ArrayList<>();
    int scanned = 0;
    for (String module : SHIPPED) {
      Path classes = REPO.resolve(module).resolve("target/classes");
      if (!Files.isDirectory(classes)) {
        // bindings/ffm is built only on Java 22+ (its profile); the others always are
        System.out.println("StartupCostTest: " + module + " not built here (" + classes + "): not scanned");
        continue;
      }
      for (Path c : classFiles(classes)) {
        scanned++;
        if (bootstrapsConcatenation(c)) {
          found.add(REPO.relativize(c).toString());
        }
      }
    }
    assertTrue(scanned > 100, "only " + scanned + " class files found under " + REPO + ": run after the modules build");
    assertEquals(List.of(), found, "classes that concatenate strings through invokedynamic: compile them with "
        + "-XDstringConcat=inline, as the root pom.xml does (classes built before it, which the compiler plugin does "
        + "not rebuild when its arguments change: run mvn clean once)");
  }

  /** Fails on a class compiled as javac does by default, and passes the same class compiled inline. */
  @Test
  void theCheckFindsAnIndyConcatenation(@TempDir Path dir) throws IOException {
    Path source = dir.resolve("Concat.java");
    Files.writeString(source, "class Concat { static String f(int rank) { return \"rank \" + rank; } }\n");
    assertTrue(bootstrapsConcatenation(compile(source, dir.resolve("indy"), "-XDstringConcat=indyWithConstants")));
    assertFalse(bootstrapsConcatenation(compile(source, dir.resolve("inline"), "-XDstringConcat=inline")));
  }

  private static Path compile(Path source, Path out, String concat) throws IOException {
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    Files.createDirectories(out);
    int rc = javac.run(null, null, null, "-d", out.toString(), concat, source.toString());
    assertEquals(0, rc, "javac failed on " + source);
    return out.resolve("Concat.class");
  }

  /**
   * Whether the class file names {@code java.lang.invoke.StringConcatFactory} (the bootstrap of every indy
   * concatenation) in its constant pool: a UTF-8 entry holds the name as it is, so the bytes are enough.
   */
  static boolean bootstrapsConcatenation(Path classFile) throws IOException {
    String text = new String(Files.readAllBytes(classFile), StandardCharsets.ISO_8859_1);
    return text.contains("java/lang/invoke/StringConcatFactory");
  }

  private static List<Path> classFiles(Path root) throws IOException {
    try (Stream<Path> s = Files.walk(root)) {
      return s.filter(p -> p.toString().endsWith(".class")).sorted().toList();
    }
  }
}
