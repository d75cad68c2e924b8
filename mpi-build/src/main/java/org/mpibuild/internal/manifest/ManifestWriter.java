package org.mpibuild.internal.manifest;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A record of the kernel requests a run made, for {@code mpi-build precompile}: one JSON object per line,
 * for example
 *
 * <pre>{"backend":"opencl","targets":["..."],"kernels":["saxpy"],"options":"-DN=4","source":"__kernel ...",
 *  "launch":[{"kernel":"saxpy","local":[256]}]}</pre>
 *
 * <p>{@code source} is the full source text, so a manifest needs nothing else to rebuild its kernels.
 * {@code targets} are the distinct targets of the ranks that made the request, for information: the
 * precompiling job builds for its own targets. {@code launch} lists the request's launch shapes (present only
 * when it named some; {@code global} and {@code offset} only where given), so that a precompiled binary
 * holds the same finished code. Lines are appended, never rewritten, and a request is
 * recorded once per file.
 */
public final class ManifestWriter {
  private static final Logger log = LoggerFactory.getLogger(ManifestWriter.class);

  private ManifestWriter() {}

  /** Appends requests to a manifest; used by the root of each build. Never fails a build. */
  public static final class Recorder {
    private final Path file;
    private final Set<String> recorded = new HashSet<>();
    private boolean warned;

    /** Records into {@code file}, appending to what it holds. */
    public Recorder(Path file) {
      this.file = file;
      try {
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
          recorded.add(line.trim());
        }
      } catch (NoSuchFileException e) {
        // a new manifest
      } catch (IOException e) {
        log.warn("cannot read the manifest {} ({}); recording anyway", file, e.getMessage());
      }
    }

    /** Appends every request not yet in the file. */
    public synchronized void record(List<KernelSource> requests, String backend, List<String> targets) {
      StringBuilder out = new StringBuilder();
      for (KernelSource r : requests) {
        String line = line(backend, targets, r);
        if (recorded.add(line)) {
          out.append(line).append('\n');
        }
      }
      if (out.length() == 0) {
        return;
      }
      try {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
          Files.createDirectories(parent);
        }
        Files.writeString(file, out, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      } catch (IOException e) {
        if (!warned) {
          warned = true;
          log.warn("cannot record kernel requests into {} (MPI_BUILD_RECORD): {}", file, e.toString());
        }
      }
    }
  }

  static String line(String backend, List<String> targets, KernelSource r) {
    Map<String, Object> o = new LinkedHashMap<>();
    o.put("backend", backend);
    o.put("targets", targets);
    o.put("kernels", r.kernelNames());
    o.put("options", r.options());
    o.put("source", r.source());
    if (!r.launchShapes().isEmpty()) {
      List<Object> shapes = new ArrayList<>();
      for (LaunchShape shape : r.launchShapes()) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("kernel", shape.kernel());
        s.put("local", numbers(shape.localSize()));
        if (shape.globalSize().length > 0) {
          s.put("global", numbers(shape.globalSize()));
        }
        if (shape.globalOffset().length > 0) {
          s.put("offset", numbers(shape.globalOffset()));
        }
        shapes.add(s);
      }
      o.put("launch", shapes);
    }
    return JsonWriter.write(o);
  }

  private static List<Long> numbers(long[] values) {
    return Arrays.stream(values).boxed().toList();
  }
}
