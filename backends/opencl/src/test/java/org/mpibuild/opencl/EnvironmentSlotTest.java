package org.mpibuild.opencl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** An environment variable set in place, in a process started with a slot: what C's getenv then reads. */
class EnvironmentSlotTest {
  @Test
  void theBlocksBoundsComeAfterTheCommandsNameWhateverItHolds() {
    StringBuilder fields = new StringBuilder();
    for (int f = 3; f <= 52; f++) {
      fields.append(' ').append(f == 50 ? "1000" : f == 51 ? "3000" : Integer.toString(f));
    }
    assertArrayEquals(new long[] {1000, 3000}, EnvironmentSlot.bounds("42 (a b) (c)" + fields));
    IllegalArgumentException shortLine = assertThrows(IllegalArgumentException.class,
        () -> EnvironmentSlot.bounds("42 (java) S 1 2 3"));
    assertTrue(shortLine.getMessage().contains("51"), shortLine.getMessage());
  }

  @Test
  void theSlotIsFoundOnlyWholeAndAtTheStartOfAnEntry() {
    String slot = EnvironmentSlot.NAME + "=" + EnvironmentSlot.filler() + "\0";
    assertEquals(0, EnvironmentSlot.find(bytes(slot + "HOME=/root\0")));
    assertEquals(11, EnvironmentSlot.find(bytes("HOME=/root\0" + slot)));
    assertEquals(-1, EnvironmentSlot.find(bytes("X=" + slot)), "inside another variable's value");
    assertEquals(-1, EnvironmentSlot.find(bytes(slot.substring(0, slot.length() - 2) + "\0")), "filler cut short");
    assertEquals(-1, EnvironmentSlot.find(bytes("HOME=/root\0")));
  }

  /**
   * A child JVM with the slot sets a variable; /proc/self/environ, the block getenv reads, then holds it; set again,
   * it holds the new value; restored, the slot is back and the variable gone, and the slot serves again.
   */
  @Test
  void aProcessWithTheSlotGetsTheVariableAndOneWithoutSaysWhy() throws Exception {
    String with = child(Map.of(EnvironmentSlot.NAME, EnvironmentSlot.filler()));
    assertTrue(with.contains("usable: ok\n"), "its own bytes written over it: " + with);
    assertTrue(with.contains("set: ok"), with);
    assertTrue(with.contains("\nMPI_BUILD_SLOT_TEST=4-4-1-goffs0,8-8-1\n"), with);
    assertTrue(!with.substring(0, with.indexOf("\nagain: ")).contains(EnvironmentSlot.NAME + "="), "slot gone: " + with);
    assertTrue(with.contains("\nagain: ok [MPI_BUILD_SLOT_TEST=16-1-1]\n"), with);
    assertTrue(with.contains("\nrestored: ok [" + EnvironmentSlot.NAME + "=(filler)]\n"), with);
    assertTrue(with.contains("\nonce more: ok [MPI_BUILD_SLOT_OTHER=2-2-2]\n"), with);
    assertTrue(with.contains("\nrestored: ok\n"), with);
    String without = child(Map.of());
    assertTrue(without.contains("usable: this process was started with no environment slot"), without);
    assertTrue(without.contains("set: this process's environment has no slot"), without);
    assertTrue(!without.contains("MPI_BUILD_SLOT_TEST"), without);
    // the slot's whole entry is NAME=FILLER: a name and value longer than that do not fit
    String tooLong = EnvironmentSlot.set("MPI_BUILD_SLOT_TEST", "x".repeat(EnvironmentSlot.CAPACITY + 8));
    assertTrue(tooLong != null && tooLong.contains("does not fit"), tooLong);
  }

  private static String child(Map<String, String> env) throws Exception {
    ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
        System.getProperty("java.class.path"), Child.class.getName()).redirectErrorStream(true);
    pb.environment().remove(EnvironmentSlot.NAME);
    pb.environment().putAll(env);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, p.waitFor(), out);
    return out;
  }

  /** Sets the variable and prints what it set and its environment block, one variable a line. */
  public static final class Child {
    public static void main(String[] args) throws Exception {
      System.out.println("usable: " + ok(EnvironmentSlot.problem(System.getenv())));
      String problem = EnvironmentSlot.set("MPI_BUILD_SLOT_TEST", "4-4-1-goffs0,8-8-1");
      System.out.println("set: " + (problem == null ? "ok" : problem));
      for (String entry : environ()) {
        System.out.println(entry);
      }
      if (problem == null) {
        System.out.println("again: " + ok(EnvironmentSlot.set("MPI_BUILD_SLOT_TEST", "16-1-1")) + " " + ours());
        System.out.println("restored: " + ok(EnvironmentSlot.restore()) + " " + ours());
        System.out.println("once more: " + ok(EnvironmentSlot.set("MPI_BUILD_SLOT_OTHER", "2-2-2")) + " " + ours());
        System.out.println("restored: " + ok(EnvironmentSlot.restore()));
      }
    }

    private static List<String> environ() throws java.io.IOException {
      return List.of(Files.readString(Path.of("/proc/self/environ"), StandardCharsets.UTF_8).split("\0"));
    }

    private static String ok(String problem) {
      return problem == null ? "ok" : problem;
    }

    /** The block's entries of the test's variables and the slot's, its filler so named. */
    private static List<String> ours() throws java.io.IOException {
      return environ().stream().filter(e -> e.startsWith("MPI_BUILD_SLOT_") || e.startsWith(EnvironmentSlot.NAME + "="))
          .map(e -> e.equals(EnvironmentSlot.NAME + "=" + EnvironmentSlot.filler()) ? EnvironmentSlot.NAME + "=(filler)" : e)
          .toList();
    }
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }
}
