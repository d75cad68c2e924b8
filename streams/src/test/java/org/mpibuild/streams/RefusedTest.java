package org.mpibuild.streams;

import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The device contract's two ready-made parts: a refused step, and nothing queued behind it. */
class RefusedTest {
  @Test
  void aRefusedStepFailsWithItsRefusalWhenAsked() {
    DeviceFailure refusal = new DeviceFailure("clEnqueueReadBuffer failed: CL_INVALID_VALUE", -30);
    Refused step = new Refused(refusal);
    assertSame(refusal, assertThrows(DeviceFailure.class, step::finished));
    step.release(); // holds nothing
    assertThrows(NullPointerException.class, () -> new Refused(null));
  }

  @Test
  void nothingQueuedIsAnOpenGateAndAFinishedStep() {
    NothingQueued nothing = NothingQueued.NOTHING_QUEUED;
    nothing.open();
    nothing.fail();
    assertTrue(nothing.finished());
    nothing.releaseCompleted();
  }
}
