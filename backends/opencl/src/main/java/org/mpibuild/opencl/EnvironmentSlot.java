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
 * (no {@code /proc}, no slot, a value longer than the slot), {@link #set} says why and leaves the slot whole.
 *
 * <p>The slot serves one variable at a time: {@link #restore} writes the slot back where {@link #set} wrote, and the
 * variable is gone from the C environment again (the C library finds variables by their entries' text).
 */
final class EnvironmentSlot {
  /** The slot's name in the environment of the process that is started with one. */
  static final String NAME = "MPI_BUILD_ENVIRONMENT_SLOT";
  /** The slot's value: the longest {@code NAME=VALUE} it can hold, less its terminating zero. */
  static final int CAPACITY = 16_384;

  /** Where {@link #set} last wrote, in this process's memory, until {@link #restore}; -1 where the slot is whole. */
  private static long written = -1;

  private EnvironmentSlot() {}

  /** Whether this process was started with a slot (as {@code bin/mpi-build-rank} starts a rank). */
  static boolean present(java.util.Map<String, String> env) {
    String value = env.get(NAME);
    return value != null && value.length() == CAPACITY && value.chars().allMatch(c -> c == '.');
  }

  /** The filler the slot's variable is started with. */
  static String filler() {
    return ".".repeat(CAPACITY);
  }

  /**
   * Makes {@code name=value} a variable of this process's C environment, in the slot's place (where an earlier
   * {@code set} left another variable there, in its place).
   *
   * @return null once it is set; else why it could not be, the slot then whole again (or why it is not either)
   */
  static synchronized String set(String name, String value) {
    byte[] entry = (name + "=" + value + "\0").getBytes(StandardCharsets.UTF_8);
    if (name.isEmpty() || name.indexOf('=') >= 0 || (name + value).indexOf('\0') >= 0) {
      return "'" + name + "' with its value is no environment variable";
    }
    if (entry.length > NAME.length() + 1 + CAPACITY + 1) {
      return name + "'s value of " + entry.length + " bytes does not fit the slot of " + CAPACITY;
    }
    try (RandomAccessFile memory = new RandomAccessFile("/proc/self/mem", "rw")) {
      long at = written >= 0 ? written : locate(memory);
      if (at < 0) {
        return "this process's environment has no slot " + NAME + " of " + CAPACITY + " characters";
      }
      written = at; // from here on the slot's bytes may change: restore() puts them back
      String problem = write(memory, at, entry);
      return problem == null ? null : undone(problem);
    } catch (IOException | RuntimeException e) {
      return undone("cannot write this process's environment block: " + e);
    }
  }

  /** {@code problem}, after the slot was written back where a failed {@link #set} may have changed it. */
  private static String undone(String problem) {
    String back = restore();
    return back == null ? problem : problem + "; and the slot is not whole again: " + back;
  }

  /**
   * Writes the slot back where {@link #set} wrote: the variable set there is gone from the C environment.
   *
   * @return null once it is back, or where nothing was set; else why not
   */
  static synchronized String restore() {
    if (written < 0) {
      return null;
    }
    try (RandomAccessFile memory = new RandomAccessFile("/proc/self/mem", "rw")) {
      String problem = write(memory, written, slot());
      written = problem == null ? -1 : written;
      return problem;
    } catch (IOException | RuntimeException e) {
      return "cannot write this process's environment block: " + e;
    }
  }

  /**
   * Why this process cannot use a slot: none in {@code env}, or one that cannot be written in place (no
   * {@code /proc}, a kernel or security module that forbids writing {@code /proc/self/mem}), tried by writing the
   * slot's own bytes over it; null where it can.
   */
  static synchronized String problem(java.util.Map<String, String> env) {
    if (!present(env)) {
      return "this process was started with no environment slot " + NAME + " (bin/mpi-build-rank gives each rank one)";
    }
    if (written >= 0) {
      return null;
    }
    try (RandomAccessFile memory = new RandomAccessFile("/proc/self/mem", "rw")) {
      long at = locate(memory);
      return at < 0 ? "this process's environment has no slot " + NAME + " of " + CAPACITY + " characters"
          : write(memory, at, slot());
    } catch (IOException | RuntimeException e) {
      return "cannot write this process's environment block: " + e;
    }
  }

  /** Where the slot's entry starts in this process's memory; -1 where the environment block has none. */
  private static long locate(RandomAccessFile memory) throws IOException {
    long[] bounds = bounds(Files.readString(Path.of("/proc/self/stat"), StandardCharsets.ISO_8859_1));
    byte[] block = new byte[Math.toIntExact(bounds[1] - bounds[0])];
    memory.seek(bounds[0]);
    memory.readFully(block);
    int found = find(block);
    return found < 0 ? -1 : bounds[0] + found;
  }

  /** The slot's whole entry, {@code NAME=FILLER} and its terminating zero. */
  private static byte[] slot() {
    return (NAME + "=" + filler() + "\0").getBytes(StandardCharsets.US_ASCII);
  }

  /** Writes {@code entry} at {@code at} and reads it back; null if it was kept. */
  private static String write(RandomAccessFile memory, long at, byte[] entry) throws IOException {
    memory.seek(at);
    memory.write(entry);
    byte[] back = new byte[entry.length];
    memory.seek(at);
    memory.readFully(back);
    return Arrays.equals(back, entry) ? null : "the environment block did not keep what was written";
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
    byte[] slot = slot();
    for (int at = 0; at + slot.length <= block.length; at++) {
      if ((at == 0 || block[at - 1] == 0) && Arrays.equals(block, at, at + slot.length, slot, 0, slot.length)) {
        return at;
      }
    }
    return -1;
  }
}
