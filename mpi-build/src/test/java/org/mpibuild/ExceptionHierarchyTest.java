package org.mpibuild;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The exceptions of the API form one hierarchy: every one the library throws for a failure of its own work is an
 * {@link MpiBuildException}, so that a program can catch one type, and each keeps the parent that programs may
 * catch it by.
 */
class ExceptionHierarchyTest {
  /** Each exception of the API and the parent it extends: a program may catch any of these parents. */
  private static final Map<Class<?>, Class<?>> PARENTS = Map.ofEntries(
      Map.entry(MpiBuildException.class, RuntimeException.class),
      Map.entry(KernelBuildException.class, MpiBuildException.class),
      Map.entry(MpiUnavailableException.class, MpiBuildException.class),
      Map.entry(CompileException.class, KernelBuildException.class),
      Map.entry(RequestMismatchException.class, KernelBuildException.class),
      Map.entry(KernelLoadException.class, KernelBuildException.class),
      Map.entry(BuildTimeoutException.class, KernelBuildException.class),
      Map.entry(CorruptBinaryException.class, KernelBuildException.class),
      Map.entry(CommunicationException.class, KernelBuildException.class),
      Map.entry(BackendUnavailableException.class, KernelBuildException.class));

  /** A type that moved, or stopped extending its parent, breaks the programs that catch it by that parent. */
  @Test
  void eachExceptionExtendsTheParentProgramsCatchItBy() {
    PARENTS.forEach((type, parent) -> assertEquals(parent, type.getSuperclass(), type.getName()));
  }

  /** Unchecked, so that moving a type under it never adds a {@code throws} clause to a program. */
  @Test
  void theRootIsUnchecked() {
    assertTrue(RuntimeException.class.isAssignableFrom(MpiBuildException.class));
  }

  /**
   * Every public exception type in the API's packages ({@code org.mpibuild}, {@code .spi}, {@code .support}),
   * nested ones included, is an {@link MpiBuildException} and is listed above: a new one outside the hierarchy,
   * or one not placed in the table, fails here. ({@code DeviceFailure}, of the module {@code mpi-build-streams},
   * is held to this in that module's {@code DeviceFailureTest}.)
   */
  @Test
  void everyPublicExceptionOfTheApiIsAnMpiBuildException() throws Exception {
    List<String> found = new ArrayList<>();
    for (String name : apiClassNames()) {
      Class<?> c = Class.forName(name, false, getClass().getClassLoader());
      if (Throwable.class.isAssignableFrom(c) && Modifier.isPublic(c.getModifiers()) && !c.isAnonymousClass()
          && !c.isLocalClass()) {
        found.add(c.getName());
        assertTrue(MpiBuildException.class.isAssignableFrom(c), c.getName() + " is not an MpiBuildException");
      }
    }
    TreeSet<String> listed = new TreeSet<>();
    PARENTS.keySet().forEach(c -> listed.add(c.getName()));
    assertEquals(listed, new TreeSet<>(found), "the exceptions of the API and the table above");
  }

  /** The classes of the API's packages, from the directory or jar that holds {@link MpiBuildException}. */
  private static List<String> apiClassNames() throws IOException, URISyntaxException {
    Path where = Path.of(MpiBuildException.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<String> entries = new ArrayList<>();
    if (Files.isDirectory(where)) {
      try (Stream<Path> files = Files.walk(where.resolve("org/mpibuild"))) {
        files.filter(Files::isRegularFile).forEach(f -> entries.add(where.relativize(f).toString().replace('\\', '/')));
      }
    } else {
      try (JarFile jar = new JarFile(where.toFile())) {
        jar.stream().forEach(e -> entries.add(e.getName()));
      }
    }
    List<String> names = new ArrayList<>();
    for (String e : entries) {
      if (e.endsWith(".class") && !e.endsWith("package-info.class")
          && !e.endsWith("module-info.class") && (e.matches("org/mpibuild/[^/]+\\.class")
          || e.matches("org/mpibuild/(spi|support)/[^/]+\\.class"))) {
        names.add(e.substring(0, e.length() - ".class".length()).replace('/', '.'));
      }
    }
    assertTrue(names.contains(MpiBuildException.class.getName()), "found the API's classes in " + where);
    return names;
  }
}
