package org.mpibuild.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The FFM binding against C on the same MPI, with the MPI 5.0 standard ABI and with the implementation's
 * tables (BenchReport's ffm-abi mode; {@code make bench-ffm} runs it inside the Debian sid image of the version
 * matrix, the only suite whose MPIs ship the standard ABI): for Open MPI 6.0 and MPICH 5.0, 2 ranks, jobs of
 * {@code abi_bench.c} (built with the implementation's own {@code mpicc}) and of {@link FfmAbiBench} on each
 * ABI, in an order rotated every repetition; per repetition the ratios FFM / C of a 1, 16 and 64 MiB
 * broadcast's median and of an 8-byte ping-pong's median half round trip; medians of those paired ratios with
 * 95% intervals. Writes ffm-abi.md and prints one {@code bench: ffm-abi} line.
 */
final class FfmAbiReport {
  static final List<Integer> SIZES = List.of(1 << 20, 16 << 20, 64 << 20);
  static final int CALLS = 31;
  private static final Pattern BCAST = Pattern.compile("(?m)^bcast bytes=(\\d+) median_us=([0-9.]+)$");
  private static final Pattern PINGPONG = Pattern.compile("(?m)^pingpong bytes=8 median_half_rtt_us=([0-9.]+)$");

  private FfmAbiReport() {}

  /** One MPI of the image: its launcher and its C compiler wrapper. */
  record Mpi(String name, List<String> launcher, String mpicc) {}

  static final List<Mpi> MPIS = List.of(
      new Mpi("Open MPI", List.of("mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "2"),
          "mpicc.openmpi"),
      new Mpi("MPICH", List.of("mpiexec.mpich", "-n", "2"), "mpicc.mpich"));

  static void run(Path repo, Path out, int reps) throws Exception {
    StringBuilder md = new StringBuilder();
    StringBuilder line = new StringBuilder("bench: ffm-abi ranks=2 reps=" + reps);
    List<String> args = new ArrayList<>(List.of(Integer.toString(CALLS)));
    SIZES.forEach(b -> args.add(Integer.toString(b)));
    for (Mpi mpi : MPIS) {
      Path exe = out.resolve("abi_bench_" + mpi.mpicc().replace('.', '_'));
      BenchReport.run(List.of(mpi.mpicc(), "-O2", "-o", exe.toString(),
          repo.resolve("benchmarks/src/main/c/abi_bench.c").toString()), Map.of(), 120);
      List<String> variants = List.of("C", "FFM (standard ABI)", "FFM (tables)");
      Map<String, List<Map<String, Double>>> samples = new LinkedHashMap<>();
      variants.forEach(v -> samples.put(v, new ArrayList<>()));
      String described = "";
      for (int rep = 0; rep < reps + 1; rep++) { // the first repetition warms the page cache and is dropped
        for (int k = 0; k < variants.size(); k++) {
          String v = variants.get((rep + k) % variants.size()); // rotated order
          String text = job(repo, mpi, exe, v, args);
          Map<String, Double> m = parse(text);
          if (rep > 0) {
            samples.get(v).add(m);
          }
          if (v.contains("standard")) {
            Matcher d = Pattern.compile("(?m)^binding (\\S+)$").matcher(text);
            described = d.find() ? d.group(1) : described;
          }
          System.out.println("bench ffm-abi: " + mpi.name() + " rep " + rep + " " + v + ": " + m);
        }
      }
      md.append("#### ").append(mpi.name()).append(" (").append(described.replace('_', ' ')).append(")\n\n")
          .append("| measure | C (us) | FFM standard ABI (us) | FFM tables (us) | ABI / C [95%] | tables / C [95%] |\n")
          .append("|---|---|---|---|---|---|\n");
      String key = mpi.name().equals("Open MPI") ? "openmpi" : "mpich";
      for (String measure : measures()) {
        List<Double> c = column(samples.get("C"), measure);
        List<Double> abi = column(samples.get("FFM (standard ABI)"), measure);
        List<Double> tables = column(samples.get("FFM (tables)"), measure);
        List<Double> abiRatio = Stats.ratios(abi, c);
        List<Double> tablesRatio = Stats.ratios(tables, c);
        Stats.Interval ia = Stats.medianInterval(abiRatio, 0.95);
        Stats.Interval it = Stats.medianInterval(tablesRatio, 0.95);
        md.append(String.format(Locale.ROOT, "| %s | %.2f | %.2f | %.2f | %.3f [%.3f-%.3f] | %.3f [%.3f-%.3f] |%n",
            measure, Stats.median(c), Stats.median(abi), Stats.median(tables), Stats.median(abiRatio), ia.low(),
            ia.high(), Stats.median(tablesRatio), it.low(), it.high()));
        line.append(String.format(Locale.ROOT, " %s_abi_over_c_%s=%.3f", key, measure.replace(' ', '_'),
            Stats.median(abiRatio)));
      }
      md.append('\n');
    }
    md.append(line).append('\n');
    Files.writeString(out.resolve("ffm-abi.md"), md);
    System.out.println(md);
  }

  /** One job of {@code variant} (C, or the FFM binding on the standard ABI or on its tables) under {@code mpi}. */
  private static String job(Path repo, Mpi mpi, Path exe, String variant, List<String> args) throws Exception {
    List<String> cmd = new ArrayList<>(mpi.launcher());
    Map<String, String> env = new LinkedHashMap<>();
    if (variant.equals("C")) {
      cmd.add(exe.toString());
    } else {
      cmd.addAll(List.of(repo.resolve("bin/mpi-build-rank").toString(), "-cp", System.getProperty("java.class.path"),
          FfmAbiBench.class.getName()));
      env.put("MPI_BUILD_BINDING", "ffm");
      env.put("MPI_BUILD_MPI_ABI", variant.contains("standard") ? "standard" : "implementation");
      env.put("JAVA_TOOL_OPTIONS", "--enable-native-access=ALL-UNNAMED");
      env.put("MPI_BUILD_JAVA_OPTS", "-XX:+UseSerialGC -Xmx1g -XX:MaxDirectMemorySize=2g");
    }
    cmd.addAll(args);
    env.put("OMPI_ALLOW_RUN_AS_ROOT", "1");
    env.put("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    return BenchReport.run(cmd, env, 600);
  }

  static List<String> measures() {
    List<String> out = new ArrayList<>();
    SIZES.forEach(b -> out.add("bcast " + (b >> 20) + "MiB"));
    out.add("pingpong 8B");
    return out;
  }

  /** The measures of one job's output, by name; fails if one is missing. */
  static Map<String, Double> parse(String text) {
    Map<String, Double> m = new LinkedHashMap<>();
    Matcher b = BCAST.matcher(text);
    while (b.find()) {
      m.put("bcast " + (Integer.parseInt(b.group(1)) >> 20) + "MiB", Double.parseDouble(b.group(2)));
    }
    Matcher p = PINGPONG.matcher(text);
    if (p.find()) {
      m.put("pingpong 8B", Double.parseDouble(p.group(1)));
    }
    for (String measure : measures()) {
      if (!m.containsKey(measure)) {
        throw new IllegalStateException("the job printed no '" + measure + "':\n" + text);
      }
    }
    return m;
  }

  static List<Double> column(List<Map<String, Double>> rows, String measure) {
    return rows.stream().map(r -> r.get(measure)).toList();
  }
}
