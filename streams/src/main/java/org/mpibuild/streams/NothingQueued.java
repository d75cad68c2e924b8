package org.mpibuild.streams;

/** A gate with nothing behind it, and a step with nothing to do: see {@link #NOTHING_QUEUED}. */
public final class NothingQueued implements Gate, DeviceStep {
  /** Gate and written step where nothing was enqueued behind a refused collective ({@link Refused}). */
  public static final NothingQueued NOTHING_QUEUED = new NothingQueued();

  private NothingQueued() {}

  @Override
  public void open() {}

  @Override
  public void fail() {}

  @Override
  public boolean finished() {
    return true;
  }

  @Override
  public void release() {}
}
