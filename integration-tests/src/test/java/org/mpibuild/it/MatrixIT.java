package org.mpibuild.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The version matrix: the protocol's scenarios (org.mpibuild.programs.Portable: success with a run-checked
 * kernel, compile failure, mismatch, a batch, an async build) at 1, 2 and 4 ranks, checked on every rank, on
 * Debian bookworm, trixie and sid, with Open MPI and MPICH, through mpi.jar, the FFM binding with the
 * implementations' tables, and the FFM binding with the MPI 5.0 standard ABI.
 *
 * <p>One image per suite (docker/matrix/Containerfile, provisioned by scripts/provision), built once by
 * scripts/matrix-image and kept under a tag that names its recipe's hash; this build's jars are mounted read-only into every cell, so every
 * cell runs the same bytes (each cell prints their SHA-256 and the test compares them with the host's). Cells
 * run one after another (2 cores). Without a container engine, or without the suite's base image, a cell is
 * skipped, printing why. Writes target/matrix/matrix.md, which {@code make matrix-publish} puts in docs/mpi.md.
 */
class MatrixIT {
  static final List<Integer> RANKS = List.of(1, 2, 4);
  /**
   * Podman's own CLI where there is one: a docker CLI attached through Podman's API service keeps that service
   * busy (about one core here) for as long as a cell runs. Else the docker CLI, on DOCKER_HOST's engine.
   */
  static final String CLI = Stream.of(System.getenv().getOrDefault("PATH", "").split(":"))
      .anyMatch(d -> Files.isExecutable(Path.of(d, "podman"))) ? "podman" : "docker";
  static final Path LIB = Mpirun.REPO.resolve("programs/target/lib");
  private static final Pattern LAUNCH = Pattern.compile("^LAUNCH ranks=(\\d+) rc=(\\d+) millis=(\\d+)$");
  private static final Pattern CELL_JAR = Pattern.compile("^CELL jar=(\\S+) sha256=(\\S+)$");
  private static final Pattern CELL = Pattern.compile("^CELL os=(\\S+) mpi=(\\S+) version=(\\S+) java=(\\S+)$");

  /** A Debian suite (its Java and mpi.jar are scripts/matrix-image's business). */
  enum Suite {
    BOOKWORM, TRIXIE, SID;

    String id() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** One cell: a suite, an MPI, a binding and ABI, and the binding description every rank must report. */
  record Cell(Suite suite, String mpi, String binding, String abi, String expect) {
    String label() {
      return switch (binding + "/" + abi) {
        case "mpijava/auto" -> "mpi.jar";
        case "ffm/standard", "ffm/auto" -> expect.contains("STANDARD_ABI") ? "FFM (ABI)" : "FFM (tables)";
        default -> "FFM (tables)";
      };
    }

    @Override
    public String toString() {
      return suite.id() + " " + mpi + " " + label() + (abi.equals("auto") ? "" : " [MPI_BUILD_MPI_ABI=" + abi + "]");
    }
  }

  static List<Cell> cells() {
    return List.of(
        new Cell(Suite.BOOKWORM, "openmpi", "mpijava", "auto", "mpi.jar_COMM_WORLD"),
        new Cell(Suite.BOOKWORM, "openmpi", "ffm", "auto", "FFM_(OPEN_MPI)"),
        new Cell(Suite.BOOKWORM, "mpich", "ffm", "auto", "FFM_(MPICH)"),
        new Cell(Suite.TRIXIE, "openmpi", "mpijava", "auto", "mpi.jar_COMM_WORLD"),
        new Cell(Suite.TRIXIE, "openmpi", "ffm", "auto", "FFM_(OPEN_MPI)"),
        new Cell(Suite.TRIXIE, "mpich", "ffm", "auto", "FFM_(MPICH)"),
        // auto must pick the standard ABI where it is there; implementation forces the tables.
        new Cell(Suite.SID, "openmpi", "ffm", "auto", "FFM_(STANDARD_ABI_1.0,_Open_MPI)"),
        new Cell(Suite.SID, "openmpi", "ffm", "implementation", "FFM_(OPEN_MPI)"),
        new Cell(Suite.SID, "mpich", "ffm", "auto", "FFM_(STANDARD_ABI_1.0,_MPICH)"),
        new Cell(Suite.SID, "mpich", "ffm", "implementation", "FFM_(MPICH)"));
  }

  private static String noEngine;
  private static final Map<Suite, String> images = new LinkedHashMap<>();
  private static final Map<Suite, String> imageProblems = new LinkedHashMap<>();
  private static final Map<Suite, Long> buildMillis = new LinkedHashMap<>();
  private static final List<String> rows = new ArrayList<>();

  @BeforeAll
  static void engine() {
    noEngine = RuntimeImage.engineMissing();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cells")
  void theScenariosPassInTheCell(Cell cell) throws Exception {
    if (noEngine != null) {
      skip(cell, noEngine);
    }
    String image = image(cell.suite());
    List<String> cmd = new ArrayList<>(List.of(CLI, "run", "--rm", "--network", "none", "--shm-size=1g", "-v",
        Mpirun.REPO + ":" + Mpirun.REPO + ":ro"));
    String hostJdk = "";
    if (cell.binding().equals("ffm") && cell.suite() == Suite.BOOKWORM) {
      // bookworm has no Java 22+: the FFM binding runs on the JDK the host's build found, mounted read-only.
      Path jdk = FfmIT.JDK;
      if (!Files.isExecutable(jdk.resolve("bin/java"))) {
        skip(cell, "bookworm has no JDK 22+ and the build found none on this machine (set MPI_BUILD_FFM_JDK and "
            + "rerun scripts/provision)");
      }
      cmd.addAll(List.of("-v", jdk + ":" + jdk + ":ro", "-e", "MPI_BUILD_JAVA=" + jdk.resolve("bin/java")));
      hostJdk = jdk.toString();
    }
    boolean finished = provesFinishedCode(cell);
    if (finished) {
      cmd.addAll(List.of("-e", "MATRIX_FINISHED=1"));
    }
    cmd.add(image);
    cmd.add(Mpirun.REPO.resolve("scripts/matrix-cell").toString());
    cmd.addAll(List.of(cell.mpi(), cell.binding(), cell.abi()));
    RANKS.forEach(n -> cmd.add(Integer.toString(n)));

    long t0 = System.nanoTime();
    List<String> lines = RuntimeImage.run(cmd, 900).lines().toList();
    long cellMillis = (System.nanoTime() - t0) / 1_000_000;
    String transcript = String.join("\n", lines);

    // The same jars, byte for byte, as this build's.
    Map<String, String> hostJars = jarHashes();
    int jarsSeen = 0;
    for (String line : lines) {
      Matcher m = CELL_JAR.matcher(line);
      if (m.matches()) {
        assertEquals(hostJars.get(m.group(1)), m.group(2), "the cell ran this build's " + m.group(1));
        jarsSeen++;
      }
    }
    assertEquals(hostJars.size(), jarsSeen, "the cell saw every jar of this build:\n" + transcript);

    Map<Integer, Long> millis = new LinkedHashMap<>();
    for (String line : lines) {
      Matcher m = LAUNCH.matcher(line);
      if (m.matches()) {
        assertEquals("0", m.group(2), "the launch of " + m.group(1) + " ranks exits 0:\n" + transcript);
        millis.put(Integer.parseInt(m.group(1)), Long.parseLong(m.group(3)));
      }
    }
    assertEquals(RANKS, new ArrayList<>(millis.keySet()), "one launch per rank count:\n" + transcript);
    for (int n : RANKS) {
      PortableResults.check(lines, n, cell.expect());
    }
    if (cell.binding().equals("ffm")) {
      // doctor names the library, the tables it is driven with, and why (the launcher, the setting).
      String doctor = lines.stream().filter(l -> l.startsWith("DOCTOR ")).findFirst()
          .orElseThrow(() -> new AssertionError("doctor reported no FFM binding:\n" + transcript));
      assertTrue(doctor.contains(cell.expect().contains("STANDARD_ABI") ? "driven with the MPI 5.0 standard ABI"
          : "own ABI (implementation tables)") && doctor.contains("why: ")
          && doctor.contains("MPI_BUILD_MPI_ABI=" + cell.abi()), doctor);
      System.out.println("MatrixIT: " + cell + ": doctor: " + doctor.substring("DOCTOR ".length()));
    }
    // doctor names the persistent collectives that stream-ordered collectives use on the binding in use.
    String persistent = lines.stream().filter(l -> l.startsWith("PERSISTENT ")).findFirst()
        .map(l -> l.substring("PERSISTENT ".length()))
        .orElseThrow(() -> new AssertionError("doctor reported no persistent collectives:\n" + transcript));
    assertTrue(persistent.startsWith(expectedPersistent(cell)), cell + ": " + persistent);
    System.out.println("MatrixIT: " + cell + ": persistent collectives: " + persistent);
    String pocl = lines.stream().filter(l -> l.startsWith("CELL pocl=")).findFirst()
        .map(l -> l.substring("CELL pocl=".length())).filter(v -> !v.isBlank()).orElse("?");
    if (finished) {
      checkFinishedCode(cell, pocl, lines, transcript);
    }
    String jdkNote = hostJdk.isEmpty() ? "" : " (host's)";
    String info = lines.stream().map(CELL::matcher).filter(Matcher::matches)
        .map(m -> m.group(3) + " | " + m.group(4) + jdkNote).findFirst().orElse("? | ?");
    StringBuilder row = new StringBuilder("| " + cell.suite().id() + " | " + (cell.mpi().equals("openmpi")
        ? "Open MPI " : "MPICH ") + info.replace(" | ", " | JDK ") + " | " + cell.label()
        + (cell.abi().equals("auto") ? "" : " (`MPI_BUILD_MPI_ABI=" + cell.abi() + "`)") + " | " + pocl + " | passed"
        + (finished ? "; finished code" : "") + " |");
    for (int n : RANKS) {
      row.append(' ').append(String.format(Locale.ROOT, "%.1f", millis.get(n) / 1000.0)).append(" |");
    }
    row.append(' ').append(String.format(Locale.ROOT, "%.0f", cellMillis / 1000.0)).append(" |");
    synchronized (rows) {
      rows.add(row.toString());
    }
    System.out.println("MatrixIT: " + cell + ": passed at " + RANKS + " ranks in " + cellMillis + " ms");
  }

  /** The first cell of each suite also proves finished code on the suite's PoCL. */
  static boolean provesFinishedCode(Cell cell) {
    return cells().stream().filter(c -> c.suite() == cell.suite()).findFirst().orElseThrow().equals(cell);
  }

  private static final Pattern FINISHED = Pattern.compile(
      "^FINISHED rank=(\\d+) mode=(\\S+) loadMs=\\S+ launchMs=(\\S+) verified=(\\S+) generated=\\[(.*)]$");

  /**
   * FinishedCode at 2 ranks, each with a private, empty PoCL cache: with both shapes named no rank generates a
   * work-group function at its first launches; with only mm8's named, every rank generates mm16's (the binary
   * carries the named functions only) and none of mm8's; with none named, every rank generates both (the control
   * that shows the check can fail in this PoCL). Every rank computes right in every mode.
   */
  static void checkFinishedCode(Cell cell, String pocl, List<String> lines, String transcript) {
    Map<String, String> expected = Map.of("shapes", "", "some", "mm16/16-16-1-goffs0-smallgrid",
        "none", "mm16/16-16-1-goffs0-smallgrid, mm8/8-8-1-goffs0-smallgrid");
    for (String mode : List.of("shapes", "some", "none")) {
      assertTrue(lines.contains("FINISHED-LAUNCH mode=" + mode + " rc=0"), cell + ": FinishedCode " + mode
          + " exits 0:\n" + transcript);
      int ranks = 0;
      for (String line : lines) {
        Matcher m = FINISHED.matcher(line);
        if (m.matches() && m.group(2).equals(mode)) {
          assertEquals("true", m.group(4), cell + ", PoCL " + pocl + ": rank " + m.group(1) + " computed wrong results ("
              + mode + ")");
          assertEquals(expected.get(mode), m.group(5), cell + ", PoCL " + pocl + ": rank " + m.group(1)
              + " generated these at its first launches (" + mode + ")");
          ranks++;
        }
      }
      assertEquals(2, ranks, cell + ": FinishedCode " + mode + " reported from 2 ranks:\n" + transcript);
    }
    // The ranks compile in their own process on every PoCL: started by bin/mpi-build-rank (scripts/matrix-cell), they
    // have an environment slot, and on Java 22+ native access too
    long here = lines.stream().filter(l -> l.contains("compiled in this process")).count();
    assertTrue(here > 0, cell + ", PoCL " + pocl + ": no compile in the ranks' own process:\n" + transcript);
    // on every PoCL the 2 ranks share the compile of both shapes, the second rank from the root's front end (the
    // object of clCompileProgram: PoCL 3.1 crashed on a built program's program.bc)
    long fromFrontEnd = lines.stream().filter(l -> l.contains("compiled in this process from the root's front end"))
        .count();
    assertTrue(fromFrontEnd > 0, cell + ", PoCL " + pocl + ": no part built from the root's front end:\n" + transcript);
    System.out.println("MatrixIT: " + cell + ": finished code proven on PoCL " + pocl + ", compiled in the ranks' own "
        + "process, one front end");
  }

  /**
   * How doctor's persistent-collectives line starts in a cell: none on mpi.jar; through the FFM binding, the
   * MPI 4.0 names where the library is MPI 4.0 or later (Open MPI 5, MPICH 4, the standard ABI), Open MPI's
   * pcollreq extension on Open MPI 4.1 (bookworm).
   */
  static String expectedPersistent(Cell cell) {
    if (cell.binding().equals("mpijava")) {
      return "none";
    }
    return cell.suite() == Suite.BOOKWORM && cell.mpi().equals("openmpi") ? "MPIX_Bcast_init and MPIX_Allreduce_init"
        : "MPI_Bcast_init and MPI_Allreduce_init (MPI 4.0)";
  }

  /** The suite's image: scripts/matrix-image builds it once and keeps it while its recipe is unchanged. */
  static synchronized String image(Suite suite) throws Exception {
    if (images.containsKey(suite)) {
      return images.get(suite);
    }
    if (imageProblems.containsKey(suite)) {
      Assumptions.abort(imageProblems.get(suite));
    }
    long t0 = System.nanoTime();
    Process p = new ProcessBuilder(Mpirun.REPO.resolve("scripts/matrix-image").toString(), suite.id())
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    if (!p.waitFor(1200, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("scripts/matrix-image " + suite.id() + " did not finish in 20 minutes");
    }
    if (p.exitValue() == 3) { // no base image: the engine was set up without it
      String why = "no base image localhost/mpi-build-base:" + suite.id() + " (scripts/container-engine builds it)";
      imageProblems.put(suite, why);
      System.out.println("MatrixIT: " + suite.id() + " skipped: " + why);
      Assumptions.abort(why);
    }
    assertEquals(0, p.exitValue(), "scripts/matrix-image " + suite.id() + " failed: " + out);
    buildMillis.put(suite, (System.nanoTime() - t0) / 1_000_000);
    images.put(suite, out.lines().reduce((a, b) -> b).orElseThrow());
    return images.get(suite);
  }

  static Map<String, String> jarHashes() throws Exception {
    Map<String, String> out = new LinkedHashMap<>();
    try (Stream<Path> s = Files.list(LIB)) {
      for (Path p : s.filter(p -> p.getFileName().toString().matches("mpi-build-.*\\.jar")).sorted().toList()) {
        out.put(p.getFileName().toString(),
            HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p))));
      }
    }
    return out;
  }

  @AfterAll
  static void writeTable() throws IOException {
    if (rows.isEmpty()) {
      return;
    }
    StringBuilder md = new StringBuilder();
    md.append("| suite | MPI | Java | binding | PoCL | scenarios | 1 rank (s) | 2 ranks (s) | 4 ranks (s) | cell (s) |\n");
    md.append("|---|---|---|---|---|---|---|---|---|---|\n");
    rows.forEach(r -> md.append(r).append('\n'));
    md.append("\nImages: ");
    List<String> built = new ArrayList<>();
    for (Suite s : images.keySet()) {
      built.add("`" + images.get(s) + "` (" + buildMillis.get(s) / 1000 + " s to build or find)");
    }
    md.append(String.join(", ", built)).append(".\n");
    md.append("Run of ").append(java.time.LocalDate.now(java.time.ZoneOffset.UTC)).append(", commit ")
        .append(commit()).append(".\n");
    Path out = Mpirun.REPO.resolve("integration-tests/target/matrix/matrix.md");
    Files.createDirectories(out.getParent());
    Files.writeString(out, md.toString());
    System.out.println("MatrixIT: wrote " + out + "\n" + md);
  }

  /** The commit of the tree under test, or "unknown" outside a git checkout. */
  static String commit() {
    try {
      Process p = new ProcessBuilder("git", "-C", Mpirun.REPO.toString(), "rev-parse", "--short", "HEAD")
          .redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      return p.waitFor() == 0 ? out : "unknown";
    } catch (IOException | InterruptedException e) {
      return "unknown";
    }
  }

  /**
   * A machine with MPICH and no Open MPI at all (no ompi_info, no mpi.jar; trixie's MPICH 4.2 and Java 25):
   * {@code bin/mpi-build demo} takes MPICH's launcher and the portable demo on the FFM binding, from this
   * build's files mounted read-only.
   */
  @Test
  void theDemoRunsThroughMpiexecWhereOnlyMpichIsInstalled() throws Exception {
    if (noEngine != null) {
      System.out.println("MatrixIT: the MPICH-only demo skipped: " + noEngine);
      Assumptions.abort(noEngine);
    }
    String image = RuntimeImage.run(List.of(Mpirun.REPO.resolve("scripts/matrix-image").toString(), "trixie-mpich"),
        900).lines().reduce((a, b) -> b).orElseThrow().strip();
    String out = RuntimeImage.run(List.of(CLI, "run", "--rm", "--network", "none", "--shm-size=1g", "-v",
        Mpirun.REPO + ":" + Mpirun.REPO + ":ro", image, "bash", "-c", "set -e; ! command -v ompi_info; "
        + "mpiexec --version | head -2; cd " + Mpirun.REPO + " && bin/mpi-build demo -np 2; "
        + "echo DOCTOR-BEGIN; MPI_BUILD_MODE=mpi bin/mpi-build doctor 2>&1 || true"), 600);
    System.out.println("MatrixIT: MPICH only (" + image + "), bin/mpi-build demo -np 2, then doctor:\n" + out);
    assertTrue(out.contains("DOCTOR-BEGIN"), out);
    String demo = out.substring(0, out.indexOf("DOCTOR-BEGIN"));
    assertTrue(demo.contains("HYDRA"), "MPICH's launcher ran the job:\n" + out);
    assertTrue(demo.contains("summary: ranks=2 compiles=1") && demo.contains("binding=FFM (MPICH)"), out);
    assertEquals(2, demo.lines().filter(l -> l.startsWith("rank ") && l.endsWith("verified yes")).count(), out);
    // doctor, run by hand for an MPI job (MPI_BUILD_MODE=mpi, where a missing binding is a problem): no JVM
    // warnings of its own, and no advice to use Open MPI's mpirun for mpi.jar (which it gave before).
    String doctor = out.substring(out.indexOf("DOCTOR-BEGIN"));
    assertTrue(doctor.contains("MPICH's Hydra") && doctor.contains("the FFM binding serves it"), doctor);
    assertFalse(doctor.contains("mpirun ... java") || doctor.contains("Open MPI's mpi.jar"), doctor);
    assertFalse(doctor.lines().anyMatch(l -> l.startsWith("WARNING")), doctor);
  }

  static void skip(Cell cell, String why) {
    System.out.println("MatrixIT: " + cell + " skipped: " + why);
    Assumptions.abort(why);
  }

}
