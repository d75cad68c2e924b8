package org.mpibuild.internal.base;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The core's tests run with slf4j-api alone, as a Maven user who added no provider would. */
class EssentialWarningTest {
  @Test
  void withoutAProviderTheWarningReachesStderrOnce() {
    assertFalse(EssentialWarning.hasProvider(), "this test needs a class path without an SLF4J provider");
    PrintStream err = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      EssentialWarning.print("kernel cache directory /x is world-writable (test " + System.nanoTime() + ")");
      String once = captured.toString(StandardCharsets.UTF_8);
      EssentialWarning.print(once.substring("mpi-build: warning: ".length()).strip());
      String text = captured.toString(StandardCharsets.UTF_8);
      assertEquals(1, text.lines().count(), text);
      assertEquals(true, text.startsWith("mpi-build: warning: kernel cache directory /x is world-writable"), text);
    } finally {
      System.setErr(err);
    }
  }
}
