package org.mpibuild.streams;

import java.util.function.IntFunction;
import org.mpibuild.MpiBuildException;

/**
 * A device command that failed, with the device API's error code (an OpenCL {@code CL_*} status, a CUDA
 * {@code CUresult}), thrown by a {@link DeviceStep}. For a collective, the code travels
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

  /**
   * Throws a device failure if a device API call did not succeed: 0 is success in both OpenCL
   * ({@code CL_SUCCESS}) and CUDA ({@code CUDA_SUCCESS}).
   *
   * @param code what the call returned
   * @param what the call, for the message, for example {@code "clEnqueueReadBuffer"}
   * @param codeNames names a code, for example {@code CL::stringFor_errorCode}
   * @throws DeviceFailure "{@code what} failed: {@code name}" with {@code code}, if {@code code} is not 0
   */
  public static void check(int code, String what, IntFunction<String> codeNames) {
    if (code != 0) {
      throw new DeviceFailure(what + " failed: " + codeNames.apply(code), code);
    }
  }
}
