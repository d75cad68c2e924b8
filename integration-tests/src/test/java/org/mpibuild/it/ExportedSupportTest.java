package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Issue 42, item 6: the core's exported {@code org.mpibuild.support} holds only what plug-ins use. Every public
 * type there is named by the main code of a backend, a binding or the streams module, or by another support type
 * that one of them names (what that type needs, since the exported packages never use the core's internals); one
 * only the core uses belongs among the core's internal packages.
 */
class ExportedSupportTest {
  private static final Path REPO = Path.of(System.getProperty("mpibuild.it.repo", "..")).toAbsolutePath().normalize();
  private static final List<String> PLUG_INS = List.of("backends", "bindings", "streams");

  @Test
  void everyPublicSupportTypeIsUsedByAPlugIn() throws IOException {
    List<String> types = publicTypes(REPO.resolve("mpi-build/src/main/java/org/mpibuild/support"));
    assertFalse(types.isEmpty(), "no public type found in org.mpibuild.support");
    Path support = REPO.resolve("mpi-build/src/main/java/org/mpibuild/support");
    List<String> used = new ArrayList<>();
    for (String type : types) {
      if (usedBy(REPO, type)) {
        used.add(type);
      }
    }
    List<String> unused = new ArrayList<>();
    for (String type : types) {
      if (!used.contains(type) && !namedBy(support, used, type)) {
        unused.add(type);
      }
    }
    assertEquals(List.of(), unused, "public in the exported org.mpibuild.support, but no plug-in uses them: move "
        + "them among the core's internal packages");
  }

  /** Fails on a support package with a type no plug-in names. */
  @Test
  void theCheckFindsATypeNoPlugInNames(@org.junit.jupiter.api.io.TempDir Path repo) throws IOException {
    Path support = Files.createDirectories(repo.resolve("mpi-build/src/main/java/org/mpibuild/support"));
    Files.writeString(support.resolve("Lonely.java"), "package org.mpibuild.support;\npublic final class Lonely {}\n");
    Files.writeString(support.resolve("Shared.java"), "package org.mpibuild.support;\npublic final class Shared {}\n");
    Path plugIn = Files.createDirectories(repo.resolve("backends/x/src/main/java/x"));
    Files.writeString(plugIn.resolve("X.java"), "package x;\nclass X { org.mpibuild.support.Shared s; }\n");
    assertEquals(List.of("Lonely", "Shared"), publicTypes(support));
    assertFalse(usedBy(repo, "Lonely"));
    org.junit.jupiter.api.Assertions.assertTrue(usedBy(repo, "Shared"));
  }

  /** Whether one of the support types {@code users} names {@code type}. */
  static boolean namedBy(Path support, List<String> users, String type) throws IOException {
    Pattern use = Pattern.compile("\\b" + type + "\\b");
    for (String user : users) {
      if (use.matcher(Files.readString(support.resolve(user + ".java"))).find()) {
        return true;
      }
    }
    return false;
  }

  static List<String> publicTypes(Path dir) throws IOException {
    Pattern decl = Pattern.compile("(?m)^public (final |abstract )?(class|interface|enum|record) (\\w+)");
    List<String> out = new ArrayList<>();
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
        var m = decl.matcher(Files.readString(f));
        if (m.find()) {
          out.add(m.group(3));
        }
      }
    }
    return out;
  }

  static boolean usedBy(Path repo, String type) throws IOException {
    Pattern use = Pattern.compile("\\b" + type + "\\b");
    for (String top : PLUG_INS) {
      if (!Files.isDirectory(repo.resolve(top))) {
        continue;
      }
      try (Stream<Path> files = Files.walk(repo.resolve(top))) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java") && p.toString().contains("/src/main/")).toList()) {
          if (use.matcher(Files.readString(f)).find()) {
            return true;
          }
        }
      }
    }
    return false;
  }
}
