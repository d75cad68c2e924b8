package org.mpibuild.spi;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;

/**
 * Helps backends whose Java bindings extract native libraries from their jar.
 *
 * <p>JOCL and JCuda copy their native library into {@code java.io.tmpdir} when the file is absent, and
 * load it when it is present. The copy is not atomic: ranks that start together on one node can load a
 * file that another rank is still writing. {@link #install} puts the complete file in place first,
 * atomically, so that the binding finds it whole.
 */
public final class NativeLibraries {
  private NativeLibraries() {}

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
  public static Path install(Class<?> anchor, String resource, Path target) {
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
