package org.mpibuild.internal.cache;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.Charset;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The one way the cache writes a file that others may read at any moment: whole, to a private temporary file in
 * the target's directory ({@link CacheFiles#temporaryPrefix}), then given its name in one step, so that the name
 * shows nothing or the whole file. {@link #replace} renames it atomically over whatever has the name;
 * {@link #link} gives it the name with a hard link, failing with {@code FileAlreadyExistsException} if the name
 * exists (a lock, a key: the first writer wins). {@link #close} removes the temporary file unless it was renamed.
 *
 * <pre>
 * try (AtomicFile f = AtomicFile.create(target, stem, null, calls)) {
 *   f.write(text, UTF_8).replace();
 * }
 * </pre>
 *
 * <p>Each step counts its file system call through {@link Calls}, so that the cache's count per kernel stays
 * what it was; nothing is forced to disk but by {@link #writeForced}.
 */
final class AtomicFile implements AutoCloseable {
  /** How a writer counts its file system calls, and removes a temporary file that was not renamed into place. */
  @FunctionalInterface
  interface Calls {
    /** Counts one file system call. */
    void op();

    /** Removes the temporary file left by a failure or by {@link #link}; by default counts it and throws on failure. */
    default void discard(Path temporary) throws IOException {
      op();
      Files.deleteIfExists(temporary);
    }
  }

  /** No counting; a temporary file that cannot be removed throws. */
  static final Calls UNCOUNTED = () -> { };

  private final Path target;
  private final Path temporary;
  private final Calls calls;
  private boolean renamed;
  private boolean closed;

  private AtomicFile(Path target, Path temporary, Calls calls) {
    this.target = target;
    this.temporary = temporary;
    this.calls = calls;
  }

  /**
   * Creates the temporary file for {@code target} in its directory, named {@code .STEM.N.tmp}, with
   * {@code permissions} (as {@code Files.createTempFile} gives them, under the umask), or, when null, with
   * {@code Files.createTempFile}'s own (the owner's alone). A failure throws, and leaves nothing.
   */
  static AtomicFile create(Path target, String stem, Set<PosixFilePermission> permissions, Calls calls)
      throws IOException {
    Path dir = target.toAbsolutePath().getParent();
    String prefix = CacheFiles.temporaryPrefix(stem);
    calls.op();
    String suffix = CacheFiles.TEMPORARY_SUFFIX;
    Path temporary = permissions == null ? Files.createTempFile(dir, prefix, suffix)
        : Files.createTempFile(dir, prefix, suffix, PosixFilePermissions.asFileAttribute(permissions));
    return new AtomicFile(target, temporary, calls);
  }

  /** The temporary file. */
  Path temporary() {
    return temporary;
  }

  /** Writes {@code content} to the temporary file ({@code Files.write}), not forced to disk. */
  AtomicFile write(byte[] content) throws IOException {
    calls.op();
    Files.write(temporary, content);
    return this;
  }

  /** Writes {@code text} to the temporary file ({@code Files.writeString}: refused if {@code cs} cannot encode it). */
  AtomicFile write(CharSequence text, Charset cs) throws IOException {
    calls.op();
    Files.writeString(temporary, text, cs);
    return this;
  }

  /** Writes what remains of {@code content} to the temporary file and forces it to disk (data and metadata). */
  AtomicFile writeForced(ByteBuffer content) throws IOException {
    try (FileChannel ch = FileChannel.open(temporary, StandardOpenOption.WRITE)) {
      calls.op();
      while (content.hasRemaining()) {
        ch.write(content);
      }
      ch.force(true);
    }
    return this;
  }

  /** Sets the temporary file's permissions exactly (the umask does not apply), before it gets its name. */
  AtomicFile permissions(Set<PosixFilePermission> permissions) throws IOException {
    calls.op();
    Files.setPosixFilePermissions(temporary, permissions);
    return this;
  }

  /** Renames the temporary file to the target atomically, replacing what has that name. */
  void replace() throws IOException {
    calls.op();
    Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    renamed = true;
  }

  /**
   * Links the target's name to the temporary file, atomically.
   *
   * @throws java.nio.file.FileAlreadyExistsException if the name exists: it is left as it is
   * @throws UnsupportedOperationException or a {@code FileSystemException} where the file system has no hard links
   */
  void link() throws IOException {
    calls.op();
    Files.createLink(target, temporary);
  }

  /** Removes the temporary file ({@link Calls#discard}) unless it was renamed to the target; once. */
  @Override
  public void close() throws IOException {
    if (!renamed && !closed) {
      closed = true;
      calls.discard(temporary);
    }
  }
}
