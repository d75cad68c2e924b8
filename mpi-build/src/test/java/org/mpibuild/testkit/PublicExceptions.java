package org.mpibuild.testkit;

import java.io.IOException;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarFile;
import java.util.stream.Stream;

/**
 * The public exception types of a module's packages, nested ones included, for the tests that hold each module's
 * exceptions to the library's hierarchy ({@code ExceptionHierarchyTest}, {@code DeviceFailureTest}).
 */
public final class PublicExceptions {
  private PublicExceptions() {}

  /**
   * @param anchor a class of the module (its classes are read from the directory or jar that holds it)
   * @param under the directory to walk when the module is a directory, for example {@code org/mpibuild}
   * @param entry which class files count, as a regular expression over paths such as
   *     {@code org/mpibuild/spi/Setting.class}
   * @return the public, non-local, non-anonymous {@link Throwable} types among them
   */
  public static List<Class<?>> of(Class<?> anchor, String under, String entry) throws IOException, URISyntaxException,
      ClassNotFoundException {
    Path where = Path.of(anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<String> entries = new ArrayList<>();
    if (Files.isDirectory(where)) {
      try (Stream<Path> files = Files.walk(where.resolve(under))) {
        files.filter(Files::isRegularFile).forEach(f -> entries.add(where.relativize(f).toString().replace('\\', '/')));
      }
    } else {
      try (JarFile jar = new JarFile(where.toFile())) {
        jar.stream().forEach(e -> entries.add(e.getName()));
      }
    }
    List<Class<?>> out = new ArrayList<>();
    for (String e : entries) {
      if (!e.matches(entry) || e.endsWith("package-info.class") || e.endsWith("module-info.class")) {
        continue;
      }
      Class<?> c = Class.forName(e.substring(0, e.length() - ".class".length()).replace('/', '.'), false,
          anchor.getClassLoader());
      if (Throwable.class.isAssignableFrom(c) && Modifier.isPublic(c.getModifiers()) && !c.isAnonymousClass()
          && !c.isLocalClass()) {
        out.add(c);
      }
    }
    return out;
  }
}
