package org.mpibuild.streams;

import org.mpibuild.MpiBuildException;

/**
 * A device command that failed, with the device API's error code (an OpenCL {@code CL_*} status, a CUDA
 * {@code CUresult}), thrown by a {@link StreamOrderedMessages.DeviceStep}. For a collective, the code travels
 * to every rank with the failing rank's number, so that all of them fail with the same message.
 */
public class DeviceFailure extends MpiBuildException {
  private static final long serialVersionUID = 1L;
  /** The device API's error code, not 0. */
  private final int code;

  /**
   * A failed device command.
   *
   * @param message what failed, for a person
   * @param code the device API's error code, not 0
   */
  public DeviceFailure(String message, int code) {
    super(message);
    this.code = code;
  }

  /**
   * Returns the device API's error code.
   *
   * @return the code
   */
  public int code() {
    return code;
  }
}
