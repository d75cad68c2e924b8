package org.mpibuild.support;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.Set;

/**
 * Helps backends whose Java bindings extract native libraries from their jar.
 *
 * <p>JOCL and JCuda copy their native library into {@code java.io.tmpdir} under a fixed name when the file
 * is absent, and load it when it is present. On a shared node that breaks twice: the copy is not atomic
 * (ranks that start together can load a half-written file), and the file belongs to the first user who ran
 * (with mode 600, every other user's backend fails to start). {@link #loadPrivately} puts the complete file,
 * atomically, into a directory of this user's own, and lets the binding load it from there.
 */
public final class NativeLibraries {
  private NativeLibraries() {}

  /**
   * Installs the class-path resource {@code /lib/FILE} into this user's private directory (see
   * {@link #privateDirectory()}) and runs {@code firstCall}, the binding's first use, which loads it, with
   * {@code java.io.tmpdir} pointing there; the property is restored afterwards.
   *
   * @param anchor a class whose class loader holds the resource
   * @param file the library's file name, for example {@code libJOCL_2_0_5-linux-x86_64.so}
   * @param firstCall the binding's first call, which makes it load its native library
   * @throws UncheckedIOException naming the directory, if the library cannot be put there
   */
  public static synchronized void loadPrivately(Class<?> anchor, String file, Runnable firstCall) {
    Path dir = privateDirectory();
    if (anchor.getResource("/lib/" + file) != null) {
      install(anchor, "/lib/" + file, dir.resolve(file));
    }
    String tmp = System.getProperty("java.io.tmpdir");
    System.setProperty("java.io.tmpdir", dir.toString());
    try {
      firstCall.run();
    } finally {
      System.setProperty("java.io.tmpdir", tmp);
    }
  }

  /**
   * Returns this user's private directory for native libraries: {@code $XDG_RUNTIME_DIR/mpi-build}, else
   * {@code java.io.tmpdir/mpi-build-USER}; created with mode 700 if absent, and refused (with the reason) if
   * it is not a directory of this user's that nobody else can write.
   *
   * @return the directory
   * @throws UncheckedIOException naming the directory and the reason it cannot be used
   */
  public static Path privateDirectory() {
    String runtime = System.getenv("XDG_RUNTIME_DIR");
    Path dir = runtime != null && !runtime.isBlank() && Files.isDirectory(Path.of(runtime))
        ? Path.of(runtime, "mpi-build") : Path.of(System.getProperty("java.io.tmpdir"), "mpi-build-" + userTag());
    try {
      if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
        try {
          Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(PRIVATE));
        } catch (FileAlreadyExistsException e) {
          // another rank made it meanwhile; checked below
        }
      }
      PosixFileAttributes a = Files.readAttributes(dir,
          PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      if (!a.isDirectory() || !Ownership.mine(dir) || !PRIVATE.containsAll(a.permissions())) {
        throw new IOException(dir + " is not a private directory of yours, " + Ownership.me()
            + " (" + (a.isSymbolicLink() ? "a link" : a.isDirectory() ? "owned by "
            + Ownership.owner(dir) + ", mode "
            + PosixFilePermissions.toString(a.permissions()) : "not a directory")
            + "); remove it, or set XDG_RUNTIME_DIR to a private directory");
      }
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException("no private directory for native libraries: " + e.getMessage(), e);
    }
  }

  /**
   * This user's name in a file name, or its uid when the uid has no passwd entry (then {@code user.name} is
   * {@code ?}, which two such users would share).
   */
  private static String userTag() {
    String name = System.getProperty("user.name", "");
    if (name.matches("[A-Za-z0-9._-]+")) {
      return name;
    }
    try {
      return Integer.toString(Ownership.processUid());
    } catch (IOException e) {
      throw new UncheckedIOException("no private directory for native libraries: cannot find this process's uid", e);
    }
  }

  private static final Set<PosixFilePermission> PRIVATE =
      PosixFilePermissions.fromString("rwx------");

  /**
   * Makes {@code target} hold exactly the bytes of a class-path resource, replacing a partial or
   * different file. The bytes are written to a private temporary file in the same directory, forced to
   * disk and renamed into place, so other processes see either the old file or the whole new one.
   *
   * @param anchor a class whose class loader holds the resource
   * @param resource the resource name, for example {@code "/lib/libJOCL_2_0_5-linux-x86_64.so"}
   * @param target where the binding expects the library
   * @return {@code target}
   * @throws UncheckedIOException if the resource is missing or the file cannot be written
   */
  private static Path install(Class<?> anchor, String resource, Path target) {
    byte[] bytes;
    try (InputStream in = anchor.getResourceAsStream(resource)) {
      if (in == null) {
        throw new UncheckedIOException(new IOException("no resource " + resource + " beside " + anchor.getName()));
      }
      bytes = in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read resource " + resource, e);
    }
    try {
      if (Files.isRegularFile(target) && Files.size(target) == bytes.length
          && Arrays.equals(Files.readAllBytes(target), bytes)) {
        return target;
      }
      Path dir = target.toAbsolutePath().getParent();
      Files.createDirectories(dir);
      Path part = Files.createTempFile(dir, "." + target.getFileName(), ".part");
      try {
        try (FileChannel ch = FileChannel.open(part, StandardOpenOption.WRITE)) {
          ByteBuffer buf = ByteBuffer.wrap(bytes);
          while (buf.hasRemaining()) {
            ch.write(buf);
          }
          ch.force(true);
        }
        Files.move(part, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } finally {
        Files.deleteIfExists(part);
      }
      return target;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot install native library " + target, e);
    }
  }
}
