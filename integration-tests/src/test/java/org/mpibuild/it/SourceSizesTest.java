package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Files a newcomer can read in one sitting (issue 42, item 3): in every module's main code, no file over 450
 * lines but the documented wire format, and no method over 60. A unit test: it reads sources only, so it runs
 * with {@code -DskipITs} too. The checker's own tests, on made-up sources, show that it can fail.
 */
class SourceSizesTest {
  private static final Path REPO = Path.of(System.getProperty("mpibuild.it.repo", "..")).toAbsolutePath().normalize();

  /**
   * Files exempt from both rules while they are being split on a branch of their own: none now. Each entry must
   * still break a rule, so that an entry whose split has merged fails here and is removed.
   */
  static final Set<String> BEING_SPLIT = Set.of();

  @Test
  void noMainCodeFileOrMethodIsTooLong() throws IOException {
    List<String> breaches = new ArrayList<>();
    for (SourceSizes.Breach b : SourceSizes.inRepository(REPO, BEING_SPLIT)) {
      breaches.add(b.toString());
    }
    assertEquals(List.of(), breaches, "split these into files of one job each, and methods of a screen (60 lines)");
  }

  @Test
  void theCheckerReadsEveryModulesMainCode() throws IOException {
    List<Path> sources = SourceSizes.mainSources(REPO);
    for (String module : List.of("mpi-build", "streams", "backends/opencl", "backends/cuda", "bindings/mpijava",
        "bindings/ffm", "cli", "testkit", "programs", "benchmarks", "examples")) {
      assertTrue(sources.stream().anyMatch(f -> f.startsWith(REPO.resolve(module + "/src/main"))),
          "no main code read in " + module);
    }
    assertTrue(sources.stream().anyMatch(f -> f.toString().contains("/src/main/java22/")), "the java22 sources");
  }

  @Test
  void everyExemptionIsStillNeeded() throws IOException {
    List<SourceSizes.Breach> all = SourceSizes.inRepository(REPO, Set.of());
    for (String exempt : BEING_SPLIT) {
      assertTrue(Files.exists(REPO.resolve(exempt)), exempt + " is gone: remove it from BEING_SPLIT");
      List<SourceSizes.Breach> still = all.stream()
          .filter(b -> exempt.endsWith("/") ? b.file().startsWith(exempt) : b.file().equals(exempt)).toList();
      assertFalse(still.isEmpty(), exempt + " breaks neither rule any more: remove it from BEING_SPLIT");
    }
  }

  // --- the checker itself, on made-up sources

  private static String lines(int n) {
    return "// a line\n".repeat(n);
  }

  /** A class whose method {@code m} spans {@code total} lines, its declaration and closing brace included. */
  private static String classWithMethodOf(int total) {
    return "class A {\n  /**\n   * Javadoc does not count.\n   */\n  @Deprecated\n  @SuppressWarnings(\"x\")\n"
        + "  void m() {\n" + "    int x = 0;\n".repeat(total - 2) + "  }\n}\n";
  }

  @Test
  void aFileOfMoreThan450LinesBreaksTheRuleAndOneOf450DoesNot() {
    assertEquals(List.of(), SourceSizes.of("A.java", "class A {}\n" + lines(449)));
    List<SourceSizes.Breach> breaches = SourceSizes.of("A.java", "class A {}\n" + lines(450));
    assertEquals(1, breaches.size(), breaches.toString());
    assertEquals("A.java:1: the file has 451 lines (at most 450)", breaches.get(0).toString());
  }

  @Test
  void aMethodOfMoreThan60LinesBreaksTheRuleAndOneOf60DoesNot() {
    assertEquals(List.of(), SourceSizes.of("A.java", classWithMethodOf(60)));
    List<SourceSizes.Breach> breaches = SourceSizes.of("A.java", classWithMethodOf(61));
    assertEquals(List.of("A.java:7: m() has 61 lines (at most 60)"), breaches.stream().map(Object::toString).toList());
  }

  @Test
  void bracesInStringsCommentsAndAnnotationsDoNotMisleadIt() {
    String source = """
        @interface Names { String[] value(); }
        class A {
          @Names({"}", "{"})
          void a() {
            String s = "}}}"; // }
            char c = '}';
            String block = \"""
                }
                \""";
            /* } */
          }

          void b() {
          }
        }
        """;
    List<SourceSizes.Method> methods = SourceSizes.methods("A.java", source, new javax.tools.DiagnosticCollector<>());
    assertEquals(List.of(new SourceSizes.Method("a", 4, 8), new SourceSizes.Method("b", 13, 2)), methods);
  }

  @Test
  void lambdasCountInTheirMethodAndTheMethodsOfAnAnonymousClassAreMeasuredToo() {
    String source = "class A {\n  void outer() {\n    Runnable r = () -> {\n" + "      int x = 0;\n".repeat(30)
        + "    };\n    Object o = new Object() {\n      @Override\n      public String toString() {\n"
        + "        return \"\";\n      }\n    };\n  }\n\n  A() {\n  }\n\n  record R(int a) {\n    R {\n    }\n  }\n}\n";
    List<SourceSizes.Method> methods = SourceSizes.methods("A.java", source, new javax.tools.DiagnosticCollector<>());
    assertEquals(List.of(new SourceSizes.Method("outer", 2, 40), new SourceSizes.Method("toString", 37, 3),
        new SourceSizes.Method("<init>", 43, 2), new SourceSizes.Method("<init>", 47, 2)), methods);
  }

  @Test
  void aFileItCannotParseIsABreach() {
    List<SourceSizes.Breach> breaches = SourceSizes.of("A.java", "class A {\n  void m( {\n}\n");
    assertFalse(breaches.isEmpty());
    assertTrue(breaches.get(0).what().startsWith("unparsable"), breaches.toString());
  }

  @Test
  void mainCodeIsEveryModulesSrcMainJavaButNotBuildOutputsOrTests() {
    assertTrue(SourceSizes.isMainSource("mpi-build/src/main/java/org/mpibuild/MpiBuild.java"));
    assertTrue(SourceSizes.isMainSource("backends/opencl/src/main/java22/org/mpibuild/opencl/X.java"));
    assertFalse(SourceSizes.isMainSource("mpi-build/src/test/java/org/mpibuild/MpiBuildTest.java"));
    assertFalse(SourceSizes.isMainSource("mpi-build/target/generated-sources/src/main/java/X.java"));
    assertFalse(SourceSizes.isMainSource(".git/src/main/java/X.java"));
    assertFalse(SourceSizes.isMainSource("docs/src/main/java/X.txt"));
  }

  @Test
  void aRepositoryWithALongFileFailsUnlessTheFileIsExempt(@TempDir Path repo) throws IOException {
    Path file = repo.resolve("m/src/main/java/p/Long.java");
    Files.createDirectories(file.getParent());
    Files.writeString(file, "package p;\nclass Long {}\n" + lines(500));
    Path built = repo.resolve("m/target/src/main/java/p/Built.java");
    Files.createDirectories(built.getParent());
    Files.writeString(built, "class Built {}\n" + lines(500));
    assertEquals(List.of("m/src/main/java/p/Long.java:1: the file has 502 lines (at most 450)"),
        SourceSizes.inRepository(repo, Set.of()).stream().map(Object::toString).toList());
    assertEquals(List.of(), SourceSizes.inRepository(repo, Set.of("m/src/main/java/p/Long.java")));
    assertEquals(List.of(), SourceSizes.inRepository(repo, Set.of("m/")));
  }
}
