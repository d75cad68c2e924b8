package org.mpibuild.streams;

import java.util.Objects;

/**
 * The step of a collective whose device work the device refused to enqueue (a size past a buffer's end, a
 * driver without a feature): it fails with the refusal when first asked. Pass it as the collective's
 * {@code filled} step, with {@link NothingQueued#NOTHING_QUEUED} as gate and written step (or, where a rank has
 * no {@code filled} step, a broadcast's receiver, as its {@code written} step): this rank still takes part, so
 * that no rank waits for it, and a collective that agrees on its status fails on every rank with this failure
 * and this rank's number.
 *
 * @param failure what the device refused
 */
public record Refused(DeviceFailure failure) implements DeviceStep {
  /**
   * Checks the failure.
   *
   * @param failure what the device refused, not null
   */
  public Refused {
    Objects.requireNonNull(failure, "failure");
  }

  @Override
  public boolean finished() {
    throw failure;
  }

  @Override
  public void release() {}
}
