package org.mpibuild.opencl;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A variable of this process's C environment set after the process started, for a library that reads it through
 * {@code getenv} (PoCL): Java has no {@code setenv} before the FFM API of Java 22. The process is started with a
 * slot, a variable named {@link #NAME} whose value is {@link #CAPACITY} bytes of filler; {@link #set} writes
 * {@code NAME=VALUE} and a terminating zero over the slot's bytes, in place, in the environment block the kernel
 * gave the process (its bounds are fields 50 and 51 of {@code /proc/self/stat}, {@code env_start} and
 * {@code env_end}; the bytes are written through {@code /proc/self/mem}). The C environment's entry that pointed at
 * the slot then reads as the new variable; nothing is allocated or moved. Linux only: anywhere a piece is missing
 * (no {@code /proc}, no slot, a value longer than the slot), {@link #set} says why and changes nothing.
 *
 * <p>One use per process: the slot is gone once it is written.
 */
final class EnvironmentSlot {
  /** The slot's name in the environment of the process that is started with one. */
  static final String NAME = "MPI_BUILD_ENVIRONMENT_SLOT";
  /** The slot's value: the longest {@code NAME=VALUE} it can hold, less its terminating zero. */
  static final int CAPACITY = 16_384;

  private EnvironmentSlot() {}

  /** The filler the slot's variable is started with. */
  static String filler() {
    return ".".repeat(CAPACITY);
  }

  /**
   * Makes {@code name=value} a variable of this process's C environment, in the slot's place.
   *
   * @return null once it is set; else why it could not be (nothing changed)
   */
  static String set(String name, String value) {
    byte[] entry = (name + "=" + value + "\0").getBytes(StandardCharsets.UTF_8);
    if (name.isEmpty() || name.indexOf('=') >= 0 || (name + value).indexOf('\0') >= 0) {
      return "'" + name + "' with its value is no environment variable";
    }
    if (entry.length > NAME.length() + 1 + CAPACITY + 1) {
      return name + "'s value of " + value.length() + " characters does not fit the slot of " + CAPACITY;
    }
    try {
      long[] bounds = bounds(Files.readString(Path.of("/proc/self/stat"), StandardCharsets.ISO_8859_1));
      try (RandomAccessFile memory = new RandomAccessFile("/proc/self/mem", "rw")) {
        byte[] block = new byte[Math.toIntExact(bounds[1] - bounds[0])];
        memory.seek(bounds[0]);
        memory.readFully(block);
        int at = find(block);
        if (at < 0) {
          return "this process's environment has no slot " + NAME + " of " + CAPACITY + " characters";
        }
        memory.seek(bounds[0] + at);
        memory.write(entry);
        byte[] written = new byte[entry.length];
        memory.seek(bounds[0] + at);
        memory.readFully(written);
        return Arrays.equals(written, entry) ? null : "the environment block did not keep what was written";
      }
    } catch (IOException | RuntimeException e) {
      return "cannot write this process's environment block: " + e;
    }
  }

  /**
   * The environment block's bounds from a {@code /proc/PID/stat} line: fields 50 and 51, counted after the
   * command's name in parentheses (which may hold spaces and parentheses itself).
   *
   * @throws IllegalArgumentException if the line has no such fields
   */
  static long[] bounds(String stat) {
    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).strip().split(" ");
    if (fields.length < 49) {
      throw new IllegalArgumentException("/proc/self/stat has " + (fields.length + 2)
          + " fields, not the 51 that name the environment block (Linux 3.5 and later)");
    }
    long start = Long.parseLong(fields[47]);
    long end = Long.parseLong(fields[48]);
    if (start <= 0 || end <= start || end - start > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("/proc/self/stat names no environment block: " + start + " to " + end);
    }
    return new long[] {start, end};
  }

  /** Where in {@code block} the slot's entry starts, whole, at the start of an entry; -1 if nowhere. */
  static int find(byte[] block) {
    byte[] slot = (NAME + "=" + filler() + "\0").getBytes(StandardCharsets.US_ASCII);
    for (int at = 0; at + slot.length <= block.length; at++) {
      if ((at == 0 || block[at - 1] == 0) && Arrays.equals(block, at, at + slot.length, slot, 0, slot.length)) {
        return at;
      }
    }
    return -1;
  }
}
