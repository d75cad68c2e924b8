package org.mpibuild.bench;

import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.jocl.cl_program;
import org.mpibuild.KernelSource;

/**
 * The file-based caches people use today, as {@link Bench} runs them: OCCA's lock directory (up to v1.1) and
 * its atomic rename (from v1.2). Each is one timed cell of a cold or warm job, on every rank of the job.
 */
final class OccaCaches {
  /** OCCA's stale age and polling (occa/src/utils/io/lock.cpp up to v1.1). */
  static final long OCCA_STALE_MS = 20_000;
  static final long OCCA_POLL_MS = 500;

  /** The stale age and poll of the lock, in ms. */
  record Lock(long staleMillis, long pollMillis) {}

  private OccaCaches() {}

  /** The compiling rank's share of a file-based strategy: build, read the binary. */
  static byte[] compileAndRead(Bench.Run r, Ocl cl, KernelSource request, cl_program[] out) {
    out[0] = cl.build(request.source(), request.options());
    long front = r.lap(Phases.COMPILE);
    byte[] b = Ocl.binary(out[0]);
    r.compileNanos = front + r.lap(Phases.CODEGEN);
    r.compiles++;
    return b;
  }

  /**
   * OCCA up to v1.1: the first rank to create the lock directory compiles; the others poll until the lock
   * is gone, then read the binary; a lock older than the stale age is taken over. Every file system call
   * on the shared directory is counted. Writing and reading the file count as the broadcast.
   */
  static Bench.Cell lock(KernelSource request, Path dir, Lock lock, int rank, String program)
      throws Exception {
    return Bench.timed(r -> {
      Ocl cl = Ocl.open();
      r.closers.add(cl);
      Path binary = dir.resolve("binary");
      Path lockDir = dir.resolve("lock");
      cl_program[] built = {null};
      r.fsops++;
      Files.createDirectories(dir);
      r.lap(Phases.SETUP);
      while (built[0] == null) {
        r.fsops++;
        if (Files.exists(binary)) {
          r.fsops++;
          byte[] b = Files.readAllBytes(binary);
          r.bytes += b.length;
          r.lap(Phases.BROADCAST);
          built[0] = cl.load(b);
          r.lap(Phases.LOAD);
          r.receiver = true;
          break;
        }
        boolean mine;
        try {
          r.fsops++;
          Files.createDirectory(lockDir);
          mine = true;
        } catch (FileAlreadyExistsException e) {
          mine = false;
        }
        r.lap(Phases.WAIT);
        if (mine) {
          byte[] b = compileAndRead(r, cl, request, built);
          Path tmp = dir.resolve("binary." + rank + ".tmp");
          r.fsops += 3;
          Files.write(tmp, b);
          Files.move(tmp, binary, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
          Files.deleteIfExists(lockDir);
          r.bytes += b.length;
          r.lap(Phases.BROADCAST);
          break;
        }
        awaitReleaseOrStale(r, lockDir, lock);
        r.lap(Phases.WAIT);
      }
      Launch.everyKernel(cl, cl.kernels(built[0], request.kernelNames()), program);
      r.lap(Phases.LAUNCH);
      r.binaryBytes = Files.size(binary);
    });
  }

  /** Polls the lock directory until it is gone, or takes it over once it is older than the stale age. */
  private static void awaitReleaseOrStale(Bench.Run r, Path lockDir, Lock lock) throws Exception {
    while (true) {
      Thread.sleep(lock.pollMillis());
      long age;
      try {
        r.fsops++;
        age = System.currentTimeMillis() - Files.getLastModifiedTime(lockDir).toMillis();
      } catch (NoSuchFileException e) {
        return; // released
      }
      if (age > lock.staleMillis()) {
        r.fsops++;
        Files.deleteIfExists(lockDir); // stale: take it over
        return;
      }
    }
  }

  /**
   * OCCA from v1.2: a rank that finds the binary loads it; one that does not compiles into a temporary file
   * of its own and renames it over the binary (atomic, last writer wins). Cold, every rank compiles.
   */
  static Bench.Cell occa12(KernelSource request, Path dir, String program) throws Exception {
    return Bench.timed(r -> {
      Ocl cl = Ocl.open();
      r.closers.add(cl);
      Path binary = dir.resolve("binary");
      cl_program[] built = {null};
      r.fsops += 2;
      Files.createDirectories(dir);
      boolean found = Files.exists(binary);
      r.lap(Phases.SETUP);
      if (found) {
        r.fsops++;
        byte[] b = Files.readAllBytes(binary);
        r.bytes += b.length;
        r.lap(Phases.BROADCAST);
        built[0] = cl.load(b);
        r.lap(Phases.LOAD);
        r.receiver = true;
      } else {
        byte[] b = compileAndRead(r, cl, request, built);
        Path tmp = Files.createTempFile(dir, "binary.", ".tmp");
        r.fsops += 3;
        Files.write(tmp, b);
        Files.move(tmp, binary, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        r.bytes += b.length;
        r.lap(Phases.BROADCAST);
      }
      Launch.everyKernel(cl, cl.kernels(built[0], request.kernelNames()), program);
      r.lap(Phases.LAUNCH);
      r.binaryBytes = Files.size(binary);
    });
  }
}
