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
 * What {@link PoclInProcessCompileTest} runs in a JVM of Java 22 or later with native access, PoCL's cache in
 * {@code POCL_CACHE_DIR}: compiles in its own process and prints what it finds, one fact per line.
 */
public final class InProcessCompileMain {
  private InProcessCompileMain() {}

  public static void main(String[] args) throws IOException {
    OpenClBackend backend = OpenClDevices.open("Portable", null);
    Path top = Path.of(System.getenv("POCL_CACHE_DIR"));
    System.out.println("unavailable " + NativeEnvironment.unavailable());
    KernelSource request = ManyShapesTest.request();
    PoclSpecialization.Result r = PoclInProcessCompile.compile(backend, request,
        PoclSpecialization.perKernel(request.launchShapes()));
    System.out.println("functions " + ManyShapesTest.functions(r.binary()));
    String hash = PoclBinary.buildHash(r.binary());
    System.out.println("hash " + hash.equals(PoclInProcessCompile.buildHash(backend.compilerIdentity(), request)));
    System.out.println("left " + left(top, hash));
    ManyShapesTest.runsRight(backend, request, r.binary());
    System.out.println("loaded " + Files.isRegularFile(top.resolve(hash).resolve("program.bc")));
    KernelSource broken = KernelSource.of("__kernel void k0(__global float* y) { y[0] = nothing; }")
        .withLaunchShapes(java.util.List.of(LaunchShape.of("k0", 2).withGlobalSize(64)));
    try {
      PoclInProcessCompile.compile(backend, broken, PoclSpecialization.perKernel(broken.launchShapes()));
      System.out.println("error none");
    } catch (CompileException e) {
      System.out.println("error " + e.buildLog().contains("nothing"));
    }
    System.out.println("left " + left(top, hash));
    KernelSource other = request.withLaunchShapes(java.util.List.of(LaunchShape.of("k1", 16).withGlobalSize(64)));
    PoclSpecialization.Result second = PoclInProcessCompile.compile(backend, other,
        PoclSpecialization.perKernel(other.launchShapes()));
    System.out.println("second " + (second == null ? "none" : ManyShapesTest.functions(second.binary())));
    System.out.println("left " + left(top, hash));
    backend.close();
  }

  /** The programs built from a source with a nonce function still in the cache, but for {@code loaded}'s. */
  private static long left(Path top, String loaded) throws IOException {
    try (Stream<Path> files = Files.walk(top)) {
      return files.filter(f -> f.getFileName().toString().equals("program.bc"))
          .filter(f -> !f.getParent().equals(top.resolve(loaded))).filter(f -> {
        try {
          return PoclInProcessCompile.contains(Files.readAllBytes(f),
              "mpi_build_compile_".getBytes(StandardCharsets.US_ASCII));
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }).count();
    }
  }
}
