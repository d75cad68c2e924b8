package org.mpibuild.streams;

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
import org.mpibuild.MpiBuildException;

/**
 * The exceptions of this module stay in the API's hierarchy (the core's {@code ExceptionHierarchyTest} holds
 * the core's): a program catches {@link DeviceFailure} as an {@link MpiBuildException}.
 */
class DeviceFailureTest {
  /** Each public exception of this module and the parent it extends: a program may catch it by that parent. */
  private static final Map<Class<?>, Class<?>> PARENTS = Map.of(DeviceFailure.class, MpiBuildException.class);

  @Test
  void eachExceptionExtendsTheParentProgramsCatchItBy() {
    PARENTS.forEach((type, parent) -> assertEquals(parent, type.getSuperclass(), type.getName()));
  }

  @Test
  void itCarriesTheDeviceApisCode() {
    DeviceFailure f = new DeviceFailure("clEnqueueReadBuffer failed: CL_OUT_OF_RESOURCES", -5);
    assertEquals(-5, f.code());
    assertEquals("clEnqueueReadBuffer failed: CL_OUT_OF_RESOURCES", f.getMessage());
  }

  /** A new public exception of this package outside the hierarchy, or not in the table above, fails here. */
  @Test
  void everyPublicExceptionOfThePackageIsAnMpiBuildException() throws Exception {
    List<String> found = new ArrayList<>();
    for (String name : classNames()) {
      Class<?> c = Class.forName(name, false, getClass().getClassLoader());
      if (Throwable.class.isAssignableFrom(c) && Modifier.isPublic(c.getModifiers()) && !c.isAnonymousClass()
          && !c.isLocalClass()) {
        found.add(c.getName());
        assertTrue(MpiBuildException.class.isAssignableFrom(c), c.getName() + " is not an MpiBuildException");
      }
    }
    TreeSet<String> listed = new TreeSet<>();
    PARENTS.keySet().forEach(c -> listed.add(c.getName()));
    assertEquals(listed, new TreeSet<>(found), "the exceptions of the package and the table above");
  }

  /** The classes of this package, from the directory or jar that holds {@link StreamOrderedMessages}. */
  private static List<String> classNames() throws IOException, URISyntaxException {
    Path where = Path.of(StreamOrderedMessages.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<String> entries = new ArrayList<>();
    if (Files.isDirectory(where)) {
      try (Stream<Path> files = Files.walk(where.resolve("org/mpibuild/streams"))) {
        files.filter(Files::isRegularFile).forEach(f -> entries.add(where.relativize(f).toString().replace('\\', '/')));
      }
    } else {
      try (JarFile jar = new JarFile(where.toFile())) {
        jar.stream().forEach(e -> entries.add(e.getName()));
      }
    }
    List<String> names = new ArrayList<>();
    for (String e : entries) {
      if (e.matches("org/mpibuild/streams/[^/]+\\.class") && !e.endsWith("package-info.class")) {
        names.add(e.substring(0, e.length() - ".class".length()).replace('/', '.'));
      }
    }
    assertTrue(names.contains(DeviceFailure.class.getName()), "found the package's classes in " + where);
    return names;
  }
}
