package org.mpibuild.opencl;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.mpibuild.CompileException;
import org.mpibuild.KernelSource;
import org.mpibuild.LaunchShape;

/**
 * What {@link PoclInProcessCompileTest} runs in a JVM that can set PoCL's variable (Java 22 or later with native
 * access, or an environment slot), PoCL's cache in {@code POCL_CACHE_DIR}: compiles in its own process and prints what it finds, one fact per line.
 */
public final class InProcessCompileMain {
  private InProcessCompileMain() {}

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("launched")) {
      launched(Path.of(args[1]));
      return;
    }
    if (args.length > 0 && args[0].equals("alone")) {
      alone(Path.of(args[1]));
      return;
    }
    if (args.length > 0 && args[0].equals("parts")) {
      parts();
      return;
    }
    if (args.length > 0) {
      shared(args);
      return;
    }
    OpenClBackend backend = OpenClDevices.open("Portable", null);
    Path top = Path.of(System.getenv("POCL_CACHE_DIR"));
    System.out.println("unavailable " + NativeEnvironment.unavailable());
    System.out.println("way " + (NativeEnvironment.get() == NativeEnvironment.SLOT ? "slot" : "setenv"));
    // first: a compile error comes before PoCL reads the variable (which PoCL 3.1 keeps from its first read)
    KernelSource broken = KernelSource.of("__kernel void k0(__global float* y) { y[0] = nothing; }")
        .withLaunchShapes(java.util.List.of(LaunchShape.of("k0", 2).withGlobalSize(64)));
    try {
      PoclInProcessCompile.compile(backend, broken, PoclSpecialization.perKernel(broken.launchShapes()));
      System.out.println("error none");
    } catch (CompileException e) {
      System.out.println("error " + e.buildLog().contains("nothing"));
    }
    // nor shared: a source that does not compile leaves the root to compile alone (no parts), which reports the error
    KernelSource brokenPair = KernelSource.of("__kernel void k0(__global float* y) { y[0] = nothing; }\n"
        + "__kernel void k1(__global float* y) { y[0] = 1; }").withLaunchShapes(java.util.List.of(
        LaunchShape.of("k0", 2).withGlobalSize(64), LaunchShape.of("k1", 2).withGlobalSize(64)));
    System.out.println("broken shared parts " + PoclInProcessCompile.shareFrontEnd(backend, brokenPair,
        PoclSpecialization.parts(brokenPair, 2)).size());
    KernelSource request = ManyShapesTest.request();
    PoclSpecialization.Result r = PoclInProcessCompile.compile(backend, request,
        PoclSpecialization.perKernel(request.launchShapes()));
    System.out.println("functions " + ManyShapesTest.functions(r.binary()));
    System.out.println("closed " + SpecializeVariable.closed(backend));
    String hash = PoclBinary.buildHash(r.binary());
    System.out.println("hash " + hash.equals(PoclInProcessCompile.buildHash(backend, r.binary(), request)));
    System.out.println("left " + left(top, hash));
    ManyShapesTest.runsRight(backend, request, r.binary());
    System.out.println("loaded " + Files.isRegularFile(top.resolve(hash).resolve("program.bc")));
    // shapes each kernel did not name, but another did: the compile linked them to stand-ins in its own directory;
    // here they are built for real from program.bc, in this same process
    ManyShapesTest.runsRight(backend, request, r.binary(), new long[] {2, 4, 8, 1});
    ManyShapesTest.runsRight(backend, request, r.binary(), new long[] {16, 16, 16, 16});
    System.out.println("unnamed shapes ran right");
    System.out.println("left " + left(top, hash));
    KernelSource other = request.withLaunchShapes(java.util.List.of(LaunchShape.of("k1", 16).withGlobalSize(64)));
    PoclSpecialization.Result second = PoclInProcessCompile.compile(backend, other,
        PoclSpecialization.perKernel(other.launchShapes()));
    System.out.println("second " + (second == null ? "none" : ManyShapesTest.functions(second.binary())));
    System.out.println("left " + left(top, hash));
    // a shared compile of such shapes: no front end shared where the root's part cannot compile here
    KernelSource outside = request.withLaunchShapes(java.util.List.of(LaunchShape.of("k1", 16).withGlobalSize(64),
        LaunchShape.of("k2", 32).withGlobalSize(64)));
    java.util.List<String> outsideParts = PoclSpecialization.parts(outside, 2);
    System.out.println("outside parts " + outsideParts.size() + " front end shared " + PoclInProcessCompile
        .shareFrontEnd(backend, outside, outsideParts).get(1).contains(PoclInProcessCompile.FrontEnd.PREFIX));
    PoclInProcessCompile.release(backend);
    // shapes among the first's, another source: on every PoCL this compiles here (before 6.0, the kept value holds
    // them; the shapes k2 did not name are stand-ins)
    KernelSource same = KernelSource.of(request.source() + "// another request\n").withKernels("k0", "k1", "k2", "k3")
        .withLaunchShapes(java.util.List.of(LaunchShape.of("k2", 1).withGlobalSize(64)));
    PoclSpecialization.Result third = PoclInProcessCompile.compile(backend, same,
        PoclSpecialization.perKernel(same.launchShapes()));
    System.out.println("third " + (third == null ? "none" : ManyShapesTest.functions(third.binary())));
    if (third != null) {
      ManyShapesTest.runsRight(backend, same, third.binary(), new long[] {1, 2, 1, 8});
      System.out.println("third ran right");
      System.out.println("left " + left(top, hash, PoclBinary.buildHash(third.binary())));
    }
    backend.close();
  }

  /**
   * One rank of a compile shared between 2 ranks, with {@code DIR} for what they exchange: {@code root DIR} shares its
   * front end (the parts in {@code DIR/parts}), waits for {@code DIR/part-1.bin}, compiles its part, joins and runs
   * the binary; {@code part DIR} compiles part 1 from the parts and writes {@code DIR/part-1.bin}.
   */
  private static void shared(String[] args) throws Exception {
    OpenClBackend backend = OpenClDevices.open("Portable", null);
    KernelSource request = ManyShapesTest.request();
    Path dir = Path.of(args[1]);
    if (args[0].equals("root")) {
      java.util.List<String> parts = PoclInProcessCompile.shareFrontEnd(backend, request,
          PoclSpecialization.parts(request, 2));
      System.out.println("front end shared " + parts.get(1).contains(PoclInProcessCompile.FrontEnd.PREFIX));
      Files.writeString(dir.resolve("parts.tmp"), String.join("\0", parts));
      Files.move(dir.resolve("parts.tmp"), dir.resolve("parts"));
      Path other = dir.resolve("part-1.bin");
      for (int i = 0; i < 1200 && !Files.exists(other); i++) {
        Thread.sleep(50);
      }
      PoclSpecialization.Result mine = PoclInProcessCompile.compilePart(backend, request, parts.get(0),
          PoclSpecialization.part(request, parts.get(0)));
      org.mpibuild.spi.Compilation joined = backend.joinParts(request, backend.target(), java.util.List.of(
          new org.mpibuild.spi.Compilation(null, mine.binary(), ""),
          new org.mpibuild.spi.Compilation(null, Files.readAllBytes(other), "")));
      System.out.println("joined " + ManyShapesTest.functions(joined.binary()));
      joined.program().close();
      ManyShapesTest.runsRight(backend, request, joined.binary());
      System.out.println("root ran right");
      // shapes nobody named: their functions built from the joined binary's program.bc (the first part's)
      ManyShapesTest.runsRight(backend, request, joined.binary(), new long[] {16, 16, 16, 16});
      System.out.println("root ran unnamed shapes right");
    } else {
      java.util.List<String> parts = java.util.List.of(Files.readString(dir.resolve("parts")).split("\0"));
      PoclSpecialization.Result c = PoclInProcessCompile.compilePart(backend, request, parts.get(1),
          PoclSpecialization.part(request, parts.get(1)));
      System.out.println("part 1 " + ManyShapesTest.functions(c.binary()));
      Files.write(dir.resolve("part-1.tmp"), c.binary());
      Files.move(dir.resolve("part-1.tmp"), dir.resolve("part-1.bin"));
    }
    backend.close();
  }

  /**
   * A rank whose first compile in this process is the second part of a shared compile, then, for another request
   * with the same shapes, the first part: on PoCL before 6.0 the value PoCL keeps must hold the whole first
   * request's shapes, not its part's, for the later part to compile here.
   */
  private static void parts() throws Exception {
    OpenClBackend backend = OpenClDevices.open("Portable", null);
    KernelSource first = ManyShapesTest.request();
    java.util.List<String> parts = PoclSpecialization.parts(first, 2);
    PoclSpecialization.Result a = PoclInProcessCompile.compilePart(backend, first, parts.get(1),
        PoclSpecialization.part(first, parts.get(1)));
    System.out.println("parts first " + (a == null ? "none" : ManyShapesTest.functions(a.binary())));
    KernelSource second = KernelSource.of(first.source() + "// another request\n").withKernels("k0", "k1", "k2", "k3")
        .withLaunchShapes(first.launchShapes());
    parts = PoclSpecialization.parts(second, 2);
    PoclSpecialization.Result b = PoclInProcessCompile.compilePart(backend, second, parts.get(0),
        PoclSpecialization.part(second, parts.get(0)));
    System.out.println("parts second " + (b == null ? "none" : ManyShapesTest.functions(b.binary())));
    backend.close();
  }

  /**
   * A job of one rank (local mode) with the cache in {@code dir}: its kernel comes with the finished binary made
   * here, not after it; then a second job finds the entry.
   */
  private static void alone(Path dir) throws Exception {
    KernelSource request = ManyShapesTest.request();
    try (org.mpibuild.MpiBuild b = org.mpibuild.MpiBuild.builder().local().cacheDirectory(dir).build();
        org.mpibuild.Kernel k = b.mpiBuildKernel(request, 0)) {
      System.out.println("alone binary with the kernel " + (k.stats().binaryBytes() > 0));
      System.out.println("alone no compile process " + noCompileProcess());
      System.out.println("alone functions " + ManyShapesTest.functions(k.binaryData().binary()));
      ManyShapesTest.runsRight(k.as(OpenClKernel.class), ManyShapesTest.LOCAL);
      System.out.println("alone ran right");
    }
    try (org.mpibuild.MpiBuild b = org.mpibuild.MpiBuild.builder().local().cacheDirectory(dir).build();
        org.mpibuild.Kernel k = b.mpiBuildKernel(request, 0)) {
      System.out.println("alone next job hit " + k.stats().cacheHit());
    }
  }

  /**
   * Jobs of one rank (local mode) with the cache in {@code dir}, in a JVM that cannot set PoCL's variable: the kernel
   * comes at once, no compile process runs, and the binary is taken from the program once its kernels have launched
   * at their shapes ({@code binaryData()} while it is open; its close otherwise); a request whose shapes never
   * launched gets its binary from a compile (a compile process here) after its close. The next jobs find the three
   * entries.
   */
  private static void launched(Path dir) throws Exception {
    KernelSource request = ManyShapesTest.request();
    KernelSource unlaunched = request.withOptions("-D UNLAUNCHED=1");
    KernelSource closed = request.withOptions("-D CLOSED=1");
    try (org.mpibuild.MpiBuild b = org.mpibuild.MpiBuild.builder().local().cacheDirectory(dir).build()) {
      try (org.mpibuild.Kernel k = b.mpiBuildKernel(request, 0)) {
        System.out.println("launched binary with the kernel " + (k.stats().binaryBytes() > 0));
        System.out.println("launched no compile process " + noCompileProcess());
        ManyShapesTest.runsRight(k.as(OpenClKernel.class), ManyShapesTest.LOCAL);
        System.out.println("launched functions " + ManyShapesTest.functions(k.binaryData().binary()));
        ManyShapesTest.runsRight(k.as(OpenClKernel.class), new long[] {2, 4, 8, 1}); // unnamed shapes, after it
        System.out.println("launched ran right");
      }
      try (org.mpibuild.Kernel k = b.mpiBuildKernel(closed, 0)) { // launched, then closed: its close makes it
        ManyShapesTest.runsRight(k.as(OpenClKernel.class), ManyShapesTest.LOCAL);
      }
      // last: on PoCL before 6.0, where this JVM can compile in itself, its compile takes the process's one there
      b.mpiBuildKernel(unlaunched, 0).close();
    }
    for (KernelSource r : java.util.List.of(request, unlaunched, closed)) {
      try (org.mpibuild.MpiBuild b = org.mpibuild.MpiBuild.builder().local().cacheDirectory(dir).build();
          org.mpibuild.Kernel k = b.mpiBuildKernel(r, 0)) {
        System.out.println("launched next job hit " + k.stats().cacheHit() + " "
            + ManyShapesTest.functions(k.binaryData().binary()));
        ManyShapesTest.runsRight(k.as(OpenClKernel.class), ManyShapesTest.LOCAL);
      }
    }
  }

  /** Whether no compile process makes a binary in the background: it holds the one reservation while it does. */
  private static boolean noCompileProcess() {
    boolean free = PoclSpecialization.reserveBackground();
    if (free) {
      PoclSpecialization.releaseReservation();
    }
    return free;
  }

  /** The programs built from a source with a nonce function still in the cache, but for {@code loaded}'s. */
  private static long left(Path top, String... loaded) throws IOException {
    java.util.List<Path> dirs = Stream.of(loaded).map(top::resolve).toList();
    try (Stream<Path> files = Files.walk(top)) {
      return files.filter(f -> f.getFileName().toString().equals("program.bc"))
          .filter(f -> !dirs.contains(f.getParent())).filter(f -> {
        try {
          return PoclProgramDirectory.contains(Files.readAllBytes(f),
              "mpi_build_compile_".getBytes(StandardCharsets.US_ASCII));
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }).count();
    }
  }
}
