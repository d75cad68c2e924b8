package org.mpibuild.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The benchmarks behind {@code make bench}: the main comparison ({@link Comparison}), the batch build, the
 * stream-ordered messages, the FFM binding's broadcast and the cost of signed cache entries.
 *
 * <p>usage: BenchReport REPO_DIR quick|full|batch|stream|allreduce|cg|ffm|ffm-abi|signing|generic [ranks=1,2,4] [reps=N] [program=NAME]
 * (generic: [reps=N] [n=ORDER] [program=NAME]; allreduce: [reps=N] [sizes=ITERATIONS:BYTES,...] [bindings=mpijava,ffm], see
 * {@link AllReduceBench}; cg: [reps=N] [first_reps=N] [ranks=2,4] [small=SIDE] [large=SIDE] [bindings=ffm,mpijava], see
 * {@link CgBench})
 */
public final class BenchReport {

  private BenchReport() {}

  public static void main(String[] args) throws Exception {
    Path repo = Path.of(args[0]).toAbsolutePath();
    // MPI_BUILD_BENCH_OUT: another folder for the results (make bench-main-trixie keeps bookworm's apart).
    String elsewhere = System.getenv("MPI_BUILD_BENCH_OUT");
    Path out = elsewhere != null && !elsewhere.isBlank() ? Path.of(elsewhere).toAbsolutePath()
        : repo.resolve("benchmarks/target/bench");
    Files.createDirectories(out);
    String which = args.length > 1 ? args[1] : "";
    switch (which) {
      case "ffm" -> ffm(repo, out, 5, ffmJava(repo));
      case "ffm-abi" -> FfmAbiReport.run(repo, out, 7);
      case "signing" -> SigningBench.run(out, 9);
      case "stream" -> StreamBench.run(repo, out, 7);
      case "allreduce" -> allReduce(repo, out, args);
      case "cg" -> cg(repo, out.resolveSibling("bench-cg"), args);
      case "generic" -> {
        Map<String, String> kv = settings(args, Map.of("reps", "8", "n", "512", "program", "matmul4"),
            "generic takes reps=N, n=ORDER and program=NAME");
        GenericBench.run(repo, out, kv.get("program"), Integer.parseInt(kv.get("n")), Integer.parseInt(kv.get("reps")));
      }
      case "fresh" -> {
        Map<String, String> kv = settings(args, Map.of("reps", "8", "program", "matmul4", "ranks", "1,2"),
            "fresh takes reps=N, program=NAME and ranks=N,M");
        FreshProcess.run(repo, out, kv.get("program"), Integer.parseInt(kv.get("reps")),
            Arrays.stream(kv.get("ranks").split(",")).map(Integer::valueOf).toList());
      }
      case "batch" -> BatchBench.run(repo, out, BatchBench.KERNELS, BatchBench.REPS);
      default -> {
        Comparison.Mode mode = which.equals("full") ? Comparison.FULL : Comparison.QUICK;
        Comparison.run(repo, out, Comparison.override(mode, Arrays.asList(args).subList(Math.min(2, args.length),
            args.length)));
      }
    }
  }

  /** {@code allreduce [reps=N] [sizes=ITERATIONS:BYTES,...] [bindings=mpijava,ffm]}: {@link AllReduceBench}. */
  private static void allReduce(Path repo, Path out, String[] args) throws Exception {
    Map<String, String> kv = settings(args, Map.of("reps", Integer.toString(AllReduceBench.DEFAULT_REPS),
        "sizes", AllReduceBench.DEFAULT_SIZES, "bindings", "mpijava,ffm"),
        "allreduce takes reps=N, sizes=ITERATIONS:BYTES,... and bindings=mpijava,ffm");
    List<String> bindings = List.of(kv.get("bindings").split(","));
    bindings.forEach(AllReduceBench::label); // an unknown binding fails here, before any job
    AllReduceBench.run(repo, out, Integer.parseInt(kv.get("reps")), kv.get("sizes"), bindings);
  }

  /**
   * {@code cg [reps=N] [first_reps=N] [ranks=2,4] [small=SIDE] [large=SIDE] [bindings=ffm,mpijava]}: {@link CgBench},
   * into {@code bench-cg} beside the main comparison's folder.
   */
  private static void cg(Path repo, Path out, String[] args) throws Exception {
    String reps = Integer.toString(CgBench.DEFAULT_REPS);
    Map<String, String> kv = settings(args, Map.of("reps", reps, "first_reps", reps, "ranks", "2,4",
        "small", Integer.toString(CgBench.DEFAULT_SMALL), "large", Integer.toString(CgBench.DEFAULT_LARGE),
        "bindings", "ffm"), "cg takes reps=N, first_reps=N, ranks=2,4, small=SIDE, large=SIDE and bindings=ffm,mpijava");
    List<Integer> ranks = Arrays.stream(kv.get("ranks").split(",")).map(Integer::valueOf).toList();
    CgBench.run(repo, out, Integer.parseInt(kv.get("reps")), Integer.parseInt(kv.get("first_reps")), ranks,
        CgBench.grids(Integer.parseInt(kv.get("small")), Integer.parseInt(kv.get("large"))),
        List.of(kv.get("bindings").split(",")));
  }

  /**
   * A benchmark's {@code KEY=VALUE} arguments (those after its name) over {@code defaults}.
   *
   * @throws IllegalArgumentException for an argument that is not one of the keys, with {@code usage}
   */
  static Map<String, String> settings(String[] args, Map<String, String> defaults, String usage) {
    Map<String, String> kv = new TreeMap<>(defaults);
    for (String a : Arrays.asList(args).subList(2, args.length)) {
      String[] p = a.split("=", 2);
      if (p.length != 2 || !kv.containsKey(p[0])) {
        throw new IllegalArgumentException(usage + ", not '" + a + "'");
      }
      kv.put(p[0], p[1]);
    }
    return kv;
  }



  /** The JDK 22+ that provisioning found for the FFM binding ({@code -Dffm.jdk} in .mvn/maven.config). */
  static String ffmJava(Path repo) throws IOException {
    Path config = repo.resolve(".mvn/maven.config");
    Matcher m = Pattern.compile("-Dffm\\.jdk=(\\S+)").matcher(Files.exists(config) ? Files.readString(config) : "");
    if (!m.find()) {
      throw new IllegalStateException("no JDK 22+ for the FFM binding: scripts/provision found none (set MPI_BUILD_FFM_JDK)");
    }
    return m.group(1) + "/bin/java";
  }

  /** Builds {@code benchmarks/src/main/c/NAME.c} with {@code mpicc} into {@code out/NAME}; returns its path. */
  static Path buildC(Path repo, Path out, String name) throws Exception {
    Path program = out.resolve(name);
    run(List.of("mpicc", "-O2", "-o", program.toString(),
        repo.resolve("benchmarks/src/main/c/" + name + ".c").toString()), Map.of(), 120);
    return program;
  }

  /** Open MPI's {@code mpirun} starting {@code program} with {@code args} on 2 ranks of this machine. */
  static List<String> mpirunTwoRanks(Path program, String... args) {
    List<String> cmd = new ArrayList<>(List.of("mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
        program.toString()));
    cmd.addAll(List.of(args));
    return cmd;
  }

  /**
   * The FFM binding's broadcast against a plain C {@code MPI_Bcast} of the same bytes (Open MPI, 2 ranks),
   * 1 MiB to 64 MiB, alternating, {@code reps} jobs of each, 51 broadcasts per job; medians of medians.
   */
  static void ffm(Path repo, Path out, int reps, String java) throws Exception {
    Path bcast = buildC(repo, out, "bcast");
    Pattern median = Pattern.compile("median_us=([0-9.]+)");
    StringBuilder md = new StringBuilder("| payload | C MPI_Bcast (us) | FFM binding (us) | FFM / C |\n|---|---|---|---|\n");
    StringBuilder line = new StringBuilder("bench: ffm ranks=2");
    for (int bytes : List.of(1 << 20, 16 << 20, 64 << 20)) {
      List<Double> c = new ArrayList<>();
      List<Double> f = new ArrayList<>();
      for (int rep = 0; rep < reps; rep++) {
        Matcher mc = median.matcher(run(mpirunTwoRanks(bcast, Integer.toString(bytes), "51"), Map.of(), 600));
        mc.find();
        c.add(Double.parseDouble(mc.group(1)));
        Matcher mf = median.matcher(run(List.of(repo.resolve("bin/mpi-build").toString(), "run", "-np", "2", "-cp", System.getProperty("java.class.path"),
            "org.mpibuild.bench.FfmBcastBench", Integer.toString(bytes), "51"),
            Map.of("MPI_BUILD_JAVA", java, "MPI_BUILD_BINDING", "ffm",
                "JAVA_TOOL_OPTIONS", "--enable-native-access=ALL-UNNAMED",
                "MPI_BUILD_JAVA_OPTS", "-XX:+UseSerialGC -Xmx1g -XX:MaxDirectMemorySize=2g"), 600));
        mf.find();
        f.add(Double.parseDouble(mf.group(1)));
      }
      double cm = Stats.median(c);
      double fm = Stats.median(f);
      md.append(String.format(Locale.ROOT, "| %s | %.0f | %.0f | %.3f |%n", human(bytes), cm, fm, fm / cm));
      line.append(String.format(Locale.ROOT, " ffm_over_c_%s=%.3f", human(bytes).replace(" ", ""), fm / cm));
      System.out.printf(Locale.ROOT, "bench ffm: %s: C %s us, FFM %s us%n", human(bytes), c, f);
    }
    md.append('\n').append(line).append('\n');
    Files.writeString(out.resolve("ffm.md"), md);
    System.out.println(md);
  }

  static String fmt(double seconds) {
    return String.format(Locale.ROOT, "%.3f", seconds);
  }


  /** Runs a command, echoing its output, and returns it; fails on a non-zero exit or a timeout. */
  static String run(List<String> cmd, Map<String, String> env, long timeoutSeconds) throws Exception {
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().putAll(env);
    Process p = pb.start();
    StringBuilder all = new StringBuilder();
    Thread pump = new Thread(() -> {
      try (var r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          all.append(line).append('\n');
          if (line.startsWith("bench ")) {
            System.out.println(line);
          }
        }
      } catch (IOException e) {
        // the process ended
      }
    });
    pump.start();
    if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      throw new IllegalStateException(String.join(" ", cmd) + " did not finish in " + timeoutSeconds + " s");
    }
    pump.join();
    if (p.exitValue() != 0) {
      throw new IllegalStateException(String.join(" ", cmd) + " failed with exit status " + p.exitValue() + ":\n" + all);
    }
    return all.toString();
  }

  static String human(long bytes) {
    return org.mpibuild.spi.Setting.formatSize(bytes);
  }

  static void deleteTree(Path dir) throws IOException {
    org.mpibuild.support.BackendSupport.deleteTree(dir);
  }
}
