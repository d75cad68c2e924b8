package org.mpibuild;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.mpibuild.testkit.PublicExceptions;

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
    for (Class<?> c : PublicExceptions.of(MpiBuildException.class, "org/mpibuild",
        "org/mpibuild/((spi|support)/)?[^/]+\\.class")) {
      found.add(c.getName());
      assertTrue(MpiBuildException.class.isAssignableFrom(c), c.getName() + " is not an MpiBuildException");
    }
    assertTrue(found.contains(MpiBuildException.class.getName()), "found the API's classes");
    TreeSet<String> listed = new TreeSet<>();
    PARENTS.keySet().forEach(c -> listed.add(c.getName()));
    assertEquals(listed, new TreeSet<>(found), "the exceptions of the API and the table above");
  }
}
