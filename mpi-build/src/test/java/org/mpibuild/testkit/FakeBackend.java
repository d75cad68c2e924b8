package org.mpibuild.testkit;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.mpibuild.CompileException;
import org.mpibuild.KernelSource;
import org.mpibuild.MpiBuild;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Compilation;
import org.mpibuild.spi.LoadedProgram;

/** A backend without a device: the "binary" is derived from the source, and loading checks it. */
public class FakeBackend implements Backend {
  public final AtomicInteger compiles = new AtomicInteger();
  public final AtomicInteger loads = new AtomicInteger();
  public String target = "fake-device";
  public int binaryBytes = 1000;
  public RuntimeException compileFailure;
  public RuntimeException loadFailure;
  public int failNextLoads;
  public long compileSleepMillis;
  /** What the compiler prints: on success, and after the failure line when the source has a syntax error. */
  public String buildLog = "";
  /** Whether binaries depend on the target, as real ones do. */
  public boolean targetInBinary;
  /** Compiles fail on this target only, if set. */
  public String failOnTarget;

  public record Program(List<String> kernelNames, byte[] binary) implements LoadedProgram {
    @Override
    public void close() {}
  }

  public String id = "fake";

  @Override
  public String id() {
    return id;
  }

  @Override
  public String target() {
    return target;
  }

  @Override
  public Compilation compile(KernelSource request) {
    compiles.incrementAndGet();
    byte[] binary = compiled(request);
    List<String> names = request.kernelNames().isEmpty() ? List.of("main") : request.kernelNames();
    return new Compilation(new Program(names, binary), binary, buildLog.isEmpty() ? "warning: none" : buildLog);
  }

  /** When above 1, a compile may be shared between up to this many ranks: part i of n is slice i of the binary. */
  public int parts;
  /** Parts compiled on this rank, and the parts of which it was asked ("i/n"). */
  public final AtomicInteger partCompiles = new AtomicInteger();
  /** How often {@link #prepareCompiles} was called. */
  public final AtomicInteger prepares = new AtomicInteger();

  @Override
  public void prepareCompiles() {
    prepares.incrementAndGet();
  }
  public final List<String> partsCompiled = java.util.Collections.synchronizedList(new ArrayList<>());
  /** Thrown by this rank's part compiles, if set. */
  public RuntimeException partFailure;
  /** Thrown by this rank's join of parts, if set. */
  public RuntimeException joinFailure;

  @Override
  public List<String> compileParts(KernelSource request, int ranks) {
    int n = Math.min(parts, ranks);
    List<String> out = new ArrayList<>();
    for (int i = 0; n > 1 && i < n; i++) {
      out.add(i + "/" + n);
    }
    return out;
  }

  @Override
  public Compilation compilePart(KernelSource request, String buildTarget, String part) {
    partCompiles.incrementAndGet();
    partsCompiled.add(part);
    if (partFailure != null) {
      throw partFailure;
    }
    byte[] whole = compiled(request);
    int i = Integer.parseInt(part.substring(0, part.indexOf('/')));
    int n = Integer.parseInt(part.substring(part.indexOf('/') + 1));
    byte[] slice = Arrays.copyOfRange(whole, whole.length * i / n, whole.length * (i + 1) / n);
    return new Compilation(null, slice, buildLog.isEmpty() ? "warning: none" : buildLog);
  }

  @Override
  public Compilation joinParts(KernelSource request, String buildTarget, List<Compilation> parts) {
    if (joinFailure != null) {
      throw joinFailure;
    }
    ByteArrayOutputStream joined = new ByteArrayOutputStream();
    parts.forEach(p -> joined.writeBytes(p.binary()));
    byte[] binary = joined.toByteArray();
    List<String> names = request.kernelNames().isEmpty() ? List.of("main") : request.kernelNames();
    return new Compilation(new Program(names, binary), binary, parts.get(0).buildLog());
  }

  /** The binary of {@code request}, after the sleep and the failures this backend is set to. */
  private byte[] compiled(KernelSource request) {
    if (compileSleepMillis > 0) {
      try {
        Thread.sleep(compileSleepMillis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("compile interrupted");
      }
    }
    if (compileFailure != null) {
      throw compileFailure;
    }
    if (request.source().contains("syntax error") || target.equals(failOnTarget)) {
      throw new CompileException("fake compiler failed", "line 1: syntax error here" + buildLog);
    }
    return binaryFor((targetInBinary ? target : "") + request.source(), binaryBytes);
  }

  /**
   * When set, a request only this rank runs ({@link #compileAlone}) gets its program at once and its binary when
   * this future completes (or fails as it fails), as PoCL's finished code is made in the background.
   */
  public java.util.concurrent.CompletableFuture<Void> binaryGate;
  /**
   * When set (and {@link #binaryGate} too), the binary is made when first wanted ({@link Compilation#whenWanted}):
   * the program's close or {@code Kernel.binaryData()} runs it; {@link #whenWantedRuns} counts its runs.
   */
  public boolean binaryWhenWanted;
  public final AtomicInteger whenWantedRuns = new AtomicInteger();
  /** Calls of {@link #compileAlone} that took the path above, and those that made no binary. */
  public final AtomicInteger aloneCompiles = new AtomicInteger();
  public final AtomicInteger withoutBinary = new AtomicInteger();

  @Override
  public Compilation compileAlone(KernelSource request, String buildTarget, boolean needBinary) {
    if (binaryGate == null) {
      return compile(request, buildTarget);
    }
    aloneCompiles.incrementAndGet();
    Compilation c = compile(request, buildTarget);
    if (!needBinary) {
      withoutBinary.incrementAndGet();
      return Compilation.withoutBinary(c.program(), c.buildLog());
    }
    if (binaryWhenWanted) {
      java.util.concurrent.FutureTask<byte[]> task = new java.util.concurrent.FutureTask<>(() -> {
        whenWantedRuns.incrementAndGet();
        return binaryGate.thenApply(v -> c.binary()).get();
      });
      LoadedProgram program = new LoadedProgram() {
        @Override
        public List<String> kernelNames() {
          return c.program().kernelNames();
        }

        @Override
        public void close() {
          task.run(); // what the binary is made from is released here: made first
        }
      };
      return Compilation.whenWanted(program, c.buildLog(), task);
    }
    return Compilation.later(c.program(), c.buildLog(), binaryGate.thenApply(v -> c.binary()));
  }

  @Override
  public LoadedProgram load(byte[] binary, List<String> kernelNames) {
    loads.incrementAndGet();
    if (loadFailure != null) {
      throw loadFailure;
    }
    if (failNextLoads > 0) {
      failNextLoads--;
      throw new IllegalStateException("device refused the binary (test)");
    }
    return new Program(kernelNames, binary);
  }

  @Override
  public void close() {}

  public static byte[] binaryFor(String source, int size) {
    byte[] seed = source.getBytes(StandardCharsets.UTF_8);
    byte[] out = new byte[size];
    for (int i = 0; i < size; i++) {
      out[i] = (byte) (seed[i % seed.length] + i / seed.length);
    }
    return out;
  }

  public static boolean sameBinary(LoadedProgram p, String source, int size) {
    return Arrays.equals(((Program) p).binary(), binaryFor(source, size));
  }

  /**
   * Makes a real kernel cache in {@code cache}: the library builds each source there once, locally, with a
   * fake backend, so that tests of the cache commands act on what the library writes.
   *
   * @param cache the cache directory (created)
   * @param sources one kernel source per entry
   */
  public static void cacheWith(Path cache, String... sources) {
    try (MpiBuild b = MpiBuild.builder().local().backend(new FakeBackend())
        .cacheDirectory(cache).build()) {
      for (String source : sources) {
        b.mpiBuildKernel(source, 0).close();
      }
    }
  }
}
