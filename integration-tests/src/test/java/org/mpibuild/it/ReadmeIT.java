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
import org.mpibuild.spi.Setting;

/** The README cannot drift: its Java snippets compile as shown, and its configuration table is the registry. */
class ReadmeIT {
  static final Path README = DistributionIT.REPO.resolve("README.md");

  @Test
  void everyJavaSnippetCompilesAgainstTheDistribution(@TempDir Path dir) throws Exception {
    Matcher block = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL).matcher(Files.readString(README));
    String classpath = String.join(":", DistributionIT.classpath()) + ":" + System.getProperty("mpibuild.it.mpijar");
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    int n = 0;
    while (block.find()) {
      n++;
      String code = block.group(1);
      Matcher name = Pattern.compile("(?m)^(?:public )?(?:final )?class (\\w+)").matcher(code);
      assertTrue(name.find(), "README Java block " + n + " declares no class:\n" + code);
      Path src = dir.resolve("block" + n).resolve(name.group(1) + ".java");
      Files.createDirectories(src.getParent());
      Files.writeString(src, code);
      java.io.ByteArrayOutputStream errors = new java.io.ByteArrayOutputStream();
      int rc = javac.run(null, null, errors, "-cp", classpath, "-d", dir.resolve("out" + n).toString(),
          src.toString());
      assertEquals(0, rc, "README Java block " + n + " (" + name.group(1) + ") does not compile:\n"
          + errors.toString(java.nio.charset.StandardCharsets.UTF_8));
    }
    assertTrue(n >= 5, "expected the README's Java snippets, found " + n);
    System.out.println("ReadmeIT: " + n + " README Java snippets compiled against the distribution");
  }

  /** The configuration table's rows: variable to (property, default). */
  static Map<String, List<String>> table() throws Exception {
    String text = Files.readString(README);
    String section = text.substring(text.indexOf("## Configuration"));
    section = section.substring(0, section.indexOf("\n## ", 5));
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
    for (Setting<?> s : Setting.all()) {
      registered.add(s.variable());
      List<String> row = readme.get(s.variable());
      if (row == null) {
        problems.add(s.variable() + " is a setting but not in the README's table");
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
        problems.add(variable + " is in the README's table but is no setting");
      }
    }
    assertFalse(readme.isEmpty(), "no configuration table found");
    assertEquals(List.of(), problems, "README configuration table vs. the settings registry");
  }
}
