package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The release as a user of Maven Central would meet it. {@code make release} runs on a copy of the sources
 * (what git tracks, plus this machine's {@code .mvn/maven.config}); then:
 * <ul>
 *   <li>a second copy, built from clean, gives the same bytes for every published jar (reproducible);
 *   <li>the staged bundle holds every published artifact with its pom, sources, javadoc, SBOM and checksums;
 *   <li>a fresh Maven project that imports the BOM resolves our artifacts from the staged bundle only (a
 *       private local repository, the bundle first among its repositories, and each resolved artifact's
 *       origin checked) and runs under {@code mpirun -np 4}: one compile, four verified ranks.
 * </ul>
 */
class ReleaseIT {
  static final List<String> PUBLISHED = List.of("mpi-build", "mpi-build-streams", "mpi-build-mpijava", "mpi-build-opencl",
      "mpi-build-cuda");
  static Path work;
  static Path staging;
  static String version;

  @BeforeAll
  static void release() throws Exception {
    work = Files.createTempDirectory("mpi-build-release");
    Path a = copySources(work.resolve("a"));
    Commands.Run r = Commands.run(a, Map.of(), 900, List.of("scripts/release"));
    System.out.println("ReleaseIT: scripts/release\n" + r.out());
    assertEquals(0, r.exit(), r.out());
    staging = a.resolve("target/staging/repository");
    version = Commands.run(a, Map.of(), 60, List.of("bin/mpi-build", "version")).out().trim().replace("mpi-build ", "");
  }

  @AfterAll
  static void cleanUp() {
    if (work != null) {
      Mpirun.delete(work);
    }
  }

  /** The sources as a fresh clone would have them, with this machine's Maven configuration. */
  static Path copySources(Path to) throws IOException, InterruptedException {
    Commands.Run files = Commands.run(Mpirun.REPO, Map.of(), 60,
        List.of("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"));
    assertEquals(0, files.exit(), files.out());
    for (String f : files.out().split("\u0000")) {
      Path from = Mpirun.REPO.resolve(f);
      if (f.isEmpty() || !Files.isRegularFile(from)) {
        continue; // deleted in the working tree
      }
      Path dest = to.resolve(f);
      Files.createDirectories(dest.getParent());
      Files.copy(from, dest, java.nio.file.StandardCopyOption.COPY_ATTRIBUTES);
    }
    Path config = Mpirun.REPO.resolve(".mvn/maven.config");
    if (Files.exists(config)) {
      Files.createDirectories(to.resolve(".mvn"));
      Files.copy(config, to.resolve(".mvn/maven.config"));
    }
    return to;
  }

  @Test
  void theBundleHoldsEveryPublishedArtifactWithItsSourcesJavadocSbomAndChecksums() throws Exception {
    List<String> missing = new ArrayList<>();
    for (String artifact : PUBLISHED) {
      Path dir = staging.resolve("org/mpibuild/" + artifact + "/" + version);
      for (String suffix : List.of(".jar", ".pom", "-sources.jar", "-javadoc.jar", "-cyclonedx.json")) {
        for (String sum : List.of("", ".md5", ".sha1", ".sha256", ".sha512")) {
          Path f = dir.resolve(artifact + "-" + version + suffix + sum);
          if (!Files.isRegularFile(f)) {
            missing.add(staging.relativize(f).toString());
          }
        }
      }
    }
    for (String pom : List.of("mpi-build-bom", "mpi-build-parent")) {
      Path f = staging.resolve("org/mpibuild/" + pom + "/" + version + "/" + pom + "-" + version + ".pom");
      if (!Files.isRegularFile(f)) {
        missing.add(staging.relativize(f).toString());
      }
    }
    assertTrue(missing.isEmpty(), "missing from the bundle: " + missing);
    for (String artifact : PUBLISHED) {
      Path jar = staging.resolve("org/mpibuild/" + artifact + "/" + version + "/" + artifact + "-" + version + ".jar");
      try (java.util.zip.ZipFile zip = new java.util.zip.ZipFile(jar.toFile())) {
        assertTrue(zip.getEntry("META-INF/LICENSE") != null, artifact + " carries no META-INF/LICENSE");
      }
    }
    Path jar = staging.resolve("org/mpibuild/mpi-build/" + version + "/mpi-build-" + version + ".jar");
    assertEquals(sha1(jar), Files.readString(Path.of(jar + ".sha1")).trim(), "the checksum files match the files");
    String bom = Files.readString(staging.resolve("org/mpibuild/mpi-build-bom/" + version + "/mpi-build-bom-" + version
        + ".pom"));
    String pinned = bom.substring(bom.indexOf("<dependencyManagement>"), bom.indexOf("</dependencyManagement>"));
    assertTrue(!bom.contains("<parent>") && pinned.lines().filter(l -> l.contains("<groupId>"))
        .allMatch(l -> l.contains("<groupId>org.mpibuild</groupId>")), "the BOM pins our artifacts only:\n" + bom);
    try (Stream<Path> all = Files.walk(staging)) {
      System.out.println("ReleaseIT: the bundle's files (first 12):");
      all.filter(Files::isRegularFile).map(p -> staging.relativize(p).toString()).sorted().limit(12)
          .forEach(p -> System.out.println("  " + p));
    }
  }

  @Test
  void twoBuildsFromCleanGiveTheSameJars() throws Exception {
    Path b = copySources(work.resolve("b"));
    Commands.Run r = Commands.run(b, Map.of(), 900, List.of("mvn", "-B", "-q", "-o", "-Dmaven.test.skip=true", "package",
        "-pl", "mpi-build,streams,bindings/mpijava,backends/opencl,backends/cuda", "-am"));
    assertEquals(0, r.exit(), r.out());
    Map<String, String> differ = new TreeMap<>();
    for (String artifact : PUBLISHED) {
      Path staged = staging.resolve("org/mpibuild/" + artifact + "/" + version + "/" + artifact + "-" + version + ".jar");
      Path module = b.resolve(switch (artifact) {
        case "mpi-build" -> "mpi-build";
        case "mpi-build-streams" -> "streams";
        case "mpi-build-mpijava" -> "bindings/mpijava";
        case "mpi-build-opencl" -> "backends/opencl";
        default -> "backends/cuda";
      });
      Path rebuilt = module.resolve("target/" + artifact + "-" + version + ".jar");
      String first = sha256(staged);
      String second = sha256(rebuilt);
      System.out.println("ReleaseIT: " + artifact + " " + first + (first.equals(second) ? " (same)" : " vs " + second));
      if (!first.equals(second)) {
        differ.put(artifact, first + " vs " + second);
      }
    }
    assertTrue(differ.isEmpty(), "not reproducible: " + differ);
  }

  @Test
  void aConsumerImportingTheBomResolvesFromTheBundleAndRunsOnFourRanks() throws Exception {
    Path consumer = Files.createDirectories(work.resolve("consumer"));
    Path m2 = work.resolve("consumer-m2");
    Path machine = Path.of(System.getProperty("user.home"), ".m2", "repository");
    Files.writeString(consumer.resolve("pom.xml"), """
        <?xml version="1.0" encoding="UTF-8"?>
        <project xmlns="http://maven.apache.org/POM/4.0.0">
          <modelVersion>4.0.0</modelVersion>
          <groupId>example</groupId>
          <artifactId>consumer</artifactId>
          <version>1</version>
          <properties>
            <maven.compiler.release>17</maven.compiler.release>
            <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
          </properties>
          <repositories>
            <repository><id>staging</id><url>%s</url></repository>
            <repository><id>machine</id><url>%s</url></repository>
          </repositories>
          <pluginRepositories>
            <pluginRepository><id>machine</id><url>%s</url></pluginRepository>
          </pluginRepositories>
          <dependencyManagement>
            <dependencies>
              <dependency>
                <groupId>org.mpibuild</groupId>
                <artifactId>mpi-build-bom</artifactId>
                <version>%s</version>
                <type>pom</type>
                <scope>import</scope>
              </dependency>
            </dependencies>
          </dependencyManagement>
          <build>
            <plugins>
              <plugin>
                <artifactId>maven-compiler-plugin</artifactId>
                <version>3.14.0</version>
              </plugin>
              <plugin>
                <artifactId>maven-dependency-plugin</artifactId>
                <version>3.8.1</version>
              </plugin>
            </plugins>
          </build>
          <dependencies>
            <dependency><groupId>org.mpibuild</groupId><artifactId>mpi-build</artifactId></dependency>
            <dependency><groupId>org.mpibuild</groupId><artifactId>mpi-build-mpijava</artifactId></dependency>
            <dependency><groupId>org.mpibuild</groupId><artifactId>mpi-build-opencl</artifactId></dependency>
          </dependencies>
        </project>
        """.formatted(staging.toUri(), machine.toUri(), machine.toUri(), version));
    Path src = Files.createDirectories(consumer.resolve("src/main/java/consumer"));
    Files.writeString(src.resolve("Main.java"), """
        package consumer;

        import static org.jocl.CL.*;

        import org.jocl.Pointer;
        import org.jocl.Sizeof;
        import org.jocl.cl_mem;
        import org.mpibuild.Kernel;
        import org.mpibuild.KernelSource;
        import org.mpibuild.MpiBuild;
        import org.mpibuild.opencl.OpenClKernel;

        public class Main {
          public static void main(String[] args) {
            String source = "__kernel void twice(__global float* x) { int i = get_global_id(0); x[i] = 2 * x[i]; }";
            try (MpiBuild mpi = MpiBuild.create(); Kernel kernel = mpi.mpiBuildKernel(KernelSource.of(source), 0)) {
              OpenClKernel k = kernel.as(OpenClKernel.class);
              float[] x = new float[256];
              for (int i = 0; i < x.length; i++) x[i] = i;
              long bytes = (long) Sizeof.cl_float * x.length;
              cl_mem buf = clCreateBuffer(k.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, Pointer.to(x), null);
              clSetKernelArg(k.kernel("twice"), 0, Sizeof.cl_mem, Pointer.to(buf));
              clEnqueueNDRangeKernel(k.queue(), k.kernel("twice"), 1, null, new long[] {x.length}, null, 0, null, null);
              clEnqueueReadBuffer(k.queue(), buf, CL_TRUE, 0, bytes, Pointer.to(x), 0, null, null);
              clReleaseMemObject(buf);
              boolean ok = true;
              for (int i = 0; i < x.length; i++) ok &= x[i] == 2 * i;
              System.out.println("consumer rank=" + mpi.rank() + " size=" + mpi.size() + " compiled="
                  + kernel.stats().compiled() + " verified=" + ok);
            }
          }
        }
        """);
    Commands.Run build = Commands.run(consumer, Map.of(), 600, List.of("mvn", "-B", "-q",
        "-Dmaven.repo.local=" + m2, "package", "dependency:copy-dependencies", "-DincludeScope=runtime"));
    assertEquals(0, build.exit(), build.out());
    for (String artifact : List.of("mpi-build", "mpi-build-streams", "mpi-build-mpijava", "mpi-build-opencl",
        "mpi-build-bom", "mpi-build-parent")) {
      Path origin = m2.resolve("org/mpibuild/" + artifact + "/" + version + "/_remote.repositories");
      String from = Files.readString(origin, StandardCharsets.UTF_8);
      assertTrue(from.lines().filter(l -> l.contains(">")).allMatch(l -> l.endsWith(">staging=")),
          artifact + " came from elsewhere than the bundle:\n" + from);
    }
    // Each rank with a PoCL cache of its own, as bin/mpi-build gives them: PoCL 3.1 fails ("Final linking of
    // kernel ... failed") when processes unpack one program binary into a shared cache at the same moment.
    Commands.Run run = Commands.run(consumer, Map.of("MPI_BUILD_CACHE_DIR", work.resolve("consumer-cache").toString(),
        "MPI_BUILD_POCL_CACHE_ROOT", work.resolve("consumer-pocl").toString()),
        300, List.of("mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4",
            Mpirun.REPO.resolve("bin/mpi-build-rank").toString(), "-cp", "target/classes:target/dependency/*",
            "consumer.Main"));
    System.out.println("ReleaseIT: the consumer under mpirun -np 4:\n" + run.out());
    assertEquals(0, run.exit(), run.out());
    List<String> lines = run.out().lines().filter(l -> l.startsWith("consumer rank=")).toList();
    assertEquals(4, lines.size(), run.out());
    assertEquals(4, lines.stream().filter(l -> l.endsWith("verified=true")).count(), run.out());
    assertEquals(1, lines.stream().filter(l -> l.contains("compiled=true")).count(), "one compile: " + run.out());
  }

  @Test
  void aBuildWithoutMpiJarLeavesTheBindingOutAndTheDemoRunsOnFfm() throws Exception {
    String config = Files.readString(Mpirun.REPO.resolve(".mvn/maven.config"));
    java.util.regex.Matcher jdk = java.util.regex.Pattern.compile("-Dffm\\.jdk=(\\S+)").matcher(config);
    org.junit.jupiter.api.Assumptions.assumeTrue(jdk.find(), "no JDK 22+ for the FFM binding on this machine");
    Path c = copySources(work.resolve("c"));
    // What scripts/provision writes where there is no mpi.jar: no -Dmpi.version.
    Files.writeString(c.resolve(".mvn/maven.config"), "-Dffm.jdk=" + jdk.group(1) + "\n");
    Commands.Run build = Commands.run(c, Map.of(), 900, List.of("mvn", "-B", "-q", "-o", "-Dmaven.test.skip=true",
        "package"));
    assertEquals(0, build.exit(), build.out());
    assertTrue(!Files.exists(c.resolve("bindings/mpijava/target")), "the mpi.jar binding was built");
    try (Stream<Path> lib = Files.list(c.resolve("distribution/target/lib"))) {
      List<String> jars = lib.map(p -> p.getFileName().toString()).sorted().toList();
      System.out.println("ReleaseIT: without mpi.jar, the distribution is " + jars);
      assertTrue(jars.stream().noneMatch(j -> j.contains("mpijava")) && jars.stream().anyMatch(j -> j.contains("ffm")),
          jars.toString());
    }
    Commands.Run demo = Commands.run(c, Map.of("MPI_BUILD_BINDING", "ffm", "MPI_BUILD_JAVA", jdk.group(1) + "/bin/java",
        "MPI_BUILD_CACHE_DIR", work.resolve("c-cache").toString()), 300, List.of("bin/mpi-build", "demo", "-np", "2"));
    System.out.println("ReleaseIT: the demo of that build:\n" + demo.out());
    assertEquals(0, demo.exit(), demo.out());
    assertTrue(demo.out().contains("summary: ranks=2 compiles=1") && demo.out().contains("binding=FFM"), demo.out());
  }

  static String sha256(Path f) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(f)));
  }

  static String sha1(Path f) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(Files.readAllBytes(f)));
  }
}
