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
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * What users get: {@code bin/mpi-build classpath} lists the distribution and nothing else, and no module
 * outside the core reaches into its internals.
 */
class DistributionIT {
  static final Path REPO = Path.of(System.getProperty("mpibuild.it.repo")).toAbsolutePath().normalize();
  private static final Pattern NOT_SHIPPED = Pattern.compile(
      "logback|jfreechart|testkit|examples|benchmarks|programs|integration-tests|picocli|jackson|mpi-build-cli|junit");

  private static final Pattern INTERNAL_IMPORT = Pattern.compile(
      "(?m)^(?!\\s*(\\*|//)).*\\borg\\.mpibuild\\.internal\\.");

  static List<String> classpath() throws IOException, InterruptedException {
    Process p = new ProcessBuilder(REPO.resolve("bin/mpi-build").toString(), "classpath").redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    assertEquals(0, p.waitFor(), out);
    return List.of(out.split(":"));
  }

  @Test
  void classpathIsExactlyTheDistribution() throws Exception {
    List<String> names = new ArrayList<>();
    List<String> classpath = classpath();
    for (String entry : classpath) {
      Path jar = Path.of(entry);
      assertTrue(Files.isRegularFile(jar), "not a jar file: " + entry);
      assertEquals(REPO.resolve("distribution/target/lib"), jar.getParent(), entry);
      assertFalse(NOT_SHIPPED.matcher(jar.getFileName().toString()).find(), "not part of the distribution: " + entry);
      names.add(jar.getFileName().toString());
    }
    for (String needed : List.of("mpi-build-0", "mpi-build-streams-", "mpi-build-mpijava-", "mpi-build-opencl-",
        "mpi-build-cuda-", "slf4j-api-", "jocl-", "jcuda-")) {
      assertTrue(names.stream().anyMatch(n -> n.startsWith(needed)), needed + " missing from " + names);
    }
    for (String entry : classpath) {
      try (var jar = new java.util.jar.JarFile(entry)) {
        assertTrue(jar.getEntry("logback.xml") == null, "a logging configuration ships in " + entry);
      }
    }
  }

  @Test
  void noModuleImportsTheCoresInternals() throws IOException {
    List<String> offenders = new ArrayList<>();
    for (String module : List.of("streams", "bindings", "backends", "cli", "examples", "programs", "benchmarks",
        "integration-tests", "testkit")) {
      try (Stream<Path> files = Files.walk(REPO.resolve(module))) {
        files.filter(f -> f.toString().endsWith(".java") && !f.toString().contains("/target/")).forEach(f -> {
          try {
            if (INTERNAL_IMPORT.matcher(Files.readString(f)).find()) {
              offenders.add(REPO.relativize(f).toString());
            }
          } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        });
      }
    }
    assertEquals(List.of(), offenders, "files outside the core that import org.mpibuild.internal");
  }

  /** The contracts (SPI) and the helpers plug-ins share (support) stand on the API alone, never on internals. */
  @Test
  void neitherTheSpiNorTheSupportPackageImportsTheCoresInternals() throws IOException {
    List<String> offenders = new ArrayList<>();
    for (String pkg : List.of("spi", "support")) {
      try (Stream<Path> files = Files.walk(REPO.resolve("mpi-build/src/main/java/org/mpibuild/" + pkg))) {
        files.filter(f -> f.toString().endsWith(".java")).forEach(f -> {
          try {
            if (INTERNAL_IMPORT.matcher(Files.readString(f)).find()) {
              offenders.add(REPO.relativize(f).toString());
            }
          } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        });
      }
    }
    assertEquals(List.of(), offenders, "SPI or support files that use the core's internals");
  }

  @Test
  void theCoreModuleExportsTheApiTheSpiAndTheSupportPackageOnly() throws Exception {
    Path core = classpath().stream().map(Path::of).filter(j -> j.getFileName().toString().startsWith("mpi-build-0"))
        .findFirst().orElseThrow();
    java.lang.module.ModuleDescriptor d = java.lang.module.ModuleFinder.of(core).findAll().iterator().next()
        .descriptor();
    assertEquals("org.mpibuild", d.name());
    assertEquals(java.util.Set.of("org.mpibuild", "org.mpibuild.spi", "org.mpibuild.support"), d.exports().stream()
        .map(java.lang.module.ModuleDescriptor.Exports::source).collect(java.util.stream.Collectors.toSet()));
    List<String> internals = d.packages().stream().filter(p -> p.startsWith("org.mpibuild.internal")).sorted().toList();
    // agreement, cache, comm, manifest, protocol, settings, startup, wire: in the module, none exported
    assertEquals(9, internals.size(), "the internals are in the module, unexported: " + internals);
  }

  /**
   * Stream-ordered messages: a module of their own (its manifest's module name, as every module but the core)
   * with one package, which it exports (an automatic module exports all of its packages).
   */
  @Test
  void theStreamsModuleExportsItsOnePackageOnly() throws Exception {
    Path streams = classpath().stream().map(Path::of)
        .filter(j -> j.getFileName().toString().startsWith("mpi-build-streams-")).findFirst().orElseThrow();
    java.lang.module.ModuleDescriptor d = java.lang.module.ModuleFinder.of(streams).findAll().iterator().next()
        .descriptor();
    assertEquals("org.mpibuild.streams", d.name());
    assertTrue(d.isAutomatic(), streams + " has a module-info: check its exports here instead");
    assertEquals(java.util.Set.of("org.mpibuild.streams"), d.packages());
  }

  /** Every jar the distribution ships has a module name of ours: the core's module-info, the others' manifest. */
  @Test
  void everyShippedJarHasAModuleName() throws Exception {
    int ours = 0;
    for (String entry : classpath()) {
      Path jar = Path.of(entry);
      if (!jar.getFileName().toString().startsWith("mpi-build")) {
        continue;
      }
      ours++;
      java.lang.module.ModuleReference m = java.lang.module.ModuleFinder.of(jar).findAll().iterator().next();
      String name = m.descriptor().name();
      assertTrue(name.equals("org.mpibuild") || name.startsWith("org.mpibuild."), jar + " has module name " + name
          + " (derived from the file name: no Automatic-Module-Name)");
    }
    assertTrue(ours >= 5, ours + " jars of ours on the class path");
  }
}
