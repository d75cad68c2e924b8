package org.mpibuild.streams;

/** Device work held back until the progress thread of {@link StreamOrderedMessages} opens it. */
public interface Gate {
  /** Lets the work behind the gate run. */
  void open();

  /**
   * Releases the work behind the gate without the operation's result, so that nothing waits for it forever:
   * with an error where the device API can (which PoCL 3.1 and CUDA cannot: there the work runs; the engine
   * first puts an all-reduce's own input back into its staging buffer, so its device buffer is unchanged).
   */
  void fail();
}
