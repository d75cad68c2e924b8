package org.mpibuild.internal.agreement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.mpibuild.CompileException;
import org.mpibuild.CorruptBinaryException;
import org.mpibuild.internal.wire.Envelope;

class RankFailureTest {
  @Test
  void buildFailuresTravelAsTypedFields() {
    Envelope failed = Envelope.failure(Envelope.Status.COMPILE_FAILED, Envelope.Metadata.failed("fake",
        "gpu-a", List.of("k"), "", "line 1: error\u0000with a NUL", "the compiler failed", ""));
    RankFailure sent = RankFailure.build(failed, "request 2 of 3 (kernels [k])", 4);
    RankFailure got = RankFailure.decode(sent.encode());
    assertEquals(sent, got);
    CompileException e = assertInstanceOf(CompileException.class, got.toException());
    assertTrue(e.getMessage().contains("request 2 of 3") && e.getMessage().contains("[gpu-a]")
        && e.getMessage().contains("on root 4"), e.getMessage());
    assertEquals("line 1: error\u0000with a NUL", e.buildLog());
  }

  @Test
  void problemsAndTruncatedReports() {
    RankFailure p = RankFailure.problem("");
    assertEquals(RankFailure.Kind.PROBLEM, RankFailure.decode(p.encode()).kind());
    assertEquals("(no reason given)", p.reason());
    byte[] whole = RankFailure.problem("device refused it").encode();
    assertThrows(CorruptBinaryException.class, () -> RankFailure.decode(Arrays.copyOf(whole, whole.length - 3)));
    byte[] badKind = whole.clone();
    badKind[0] = 9;
    assertThrows(CorruptBinaryException.class, () -> RankFailure.decode(badKind));
  }
}
