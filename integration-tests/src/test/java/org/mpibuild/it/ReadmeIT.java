package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mpibuild.Configuration;
import org.mpibuild.spi.Setting;

/**
 * The documentation cannot drift: the Java snippets of the README and of every page in docs/ compile as
 * shown, and the configuration table (docs/configuration.md) is the settings registry.
 */
class ReadmeIT {
  static final Path README = DistributionIT.REPO.resolve("README.md");
  static final Path CONFIGURATION = DistributionIT.REPO.resolve("docs/configuration.md");

  /** The README and the pages of docs/, in name order. */
  static List<Path> pages() throws Exception {
    List<Path> pages = new ArrayList<>(List.of(README));
    try (java.util.stream.Stream<Path> docs = Files.list(DistributionIT.REPO.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
    }
    return pages;
  }

  @Test
  void everyJavaSnippetCompilesAgainstTheDistribution(@TempDir Path dir) throws Exception {
    String classpath = String.join(":", DistributionIT.classpath()) + ":" + System.getProperty("mpibuild.it.mpijar");
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    int n = 0;
    int inReadme = 0;
    for (Path page : pages()) {
      Matcher block = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL).matcher(Files.readString(page));
      String where = DistributionIT.REPO.relativize(page).toString();
    while (block.find()) {
      n++;
      inReadme += page.equals(README) ? 1 : 0;
      String code = block.group(1);
      Matcher name = Pattern.compile("(?m)^(?:public )?(?:final )?class (\\w+)").matcher(code);
      assertTrue(name.find(), where + ": Java block " + n + " declares no class:\n" + code);
      Path src = dir.resolve("block" + n).resolve(name.group(1) + ".java");
      Files.createDirectories(src.getParent());
      Files.writeString(src, code);
      java.io.ByteArrayOutputStream errors = new java.io.ByteArrayOutputStream();
      int rc = javac.run(null, null, errors, "-cp", classpath, "-d", dir.resolve("out" + n).toString(),
          src.toString());
      assertEquals(0, rc, where + ": Java block " + n + " (" + name.group(1) + ") does not compile:\n"
          + errors.toString(java.nio.charset.StandardCharsets.UTF_8));
    }
    }
    assertTrue(inReadme >= 3, "expected the README's Java snippets, found " + inReadme);
    assertTrue(n >= 7, "expected the Java snippets of the README and docs/, found " + n);
    System.out.println("ReadmeIT: " + n + " Java snippets (" + inReadme + " in the README) compiled against the "
        + "distribution");
  }

  /** The configuration table's rows: variable to (property, default). */
  static Map<String, List<String>> table() throws Exception {
    String section = Files.readString(CONFIGURATION);
    Map<String, List<String>> rows = new TreeMap<>();
    Matcher row = Pattern.compile("(?m)^\\| `(MPI_BUILD_\\w+)` \\| (`[^`]*`)? ?\\| ([^|]*) \\|").matcher(section);
    while (row.find()) {
      String property = row.group(2) == null ? "" : row.group(2).replace("`", "");
      rows.put(row.group(1), List.of(property, row.group(3).trim()));
    }
    return rows;
  }

  /** The FFM binding's settings (FfmBinding.settings()), which a Java 17 test JVM cannot load. */
  static final List<String> FFM_SETTINGS = List.of("MPI_BUILD_MPI_LIBRARY", "MPI_BUILD_MPI_ABI");

  @Test
  void configurationTableIsTheSettingsRegistry() throws Exception {
    Map<String, List<String>> readme = table();
    List<String> problems = new ArrayList<>();
    List<String> registered = new ArrayList<>();
    for (Setting<?> s : Configuration.all()) {
      registered.add(s.variable());
      List<String> row = readme.get(s.variable());
      if (row == null) {
        problems.add(s.variable() + " is a setting but not in docs/configuration.md");
        continue;
      }
      String property = s.property() == null ? "" : s.property();
      if (!row.get(0).equals(property)) {
        problems.add(s.variable() + ": README says property '" + row.get(0) + "', the code '" + property + "'");
      }
      if (!row.get(1).equals(s.defaultText())) {
        problems.add(s.variable() + ": README says default '" + row.get(1) + "', the code '" + s.defaultText() + "'");
      }
    }
    for (String variable : readme.keySet()) {
      // The FFM binding's settings are registered only where the binding loads (Java 22+).
      boolean ffmHere = Runtime.version().feature() >= 22;
      if (!registered.contains(variable) && (ffmHere || !FFM_SETTINGS.contains(variable))) {
        problems.add(variable + " is in docs/configuration.md but is no setting");
      }
    }
    assertFalse(readme.isEmpty(), "no configuration table found");
    assertEquals(List.of(), problems, "docs/configuration.md vs. the settings registry");
  }
}
