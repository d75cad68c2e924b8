package org.mpibuild.programs;

import static org.jocl.CL.CL_SUCCESS;

import org.jocl.CL;

/** The programs' check of an OpenCL return code. */
final class OpenClChecks {
  private OpenClChecks() {}

  /** Throws, naming the error, unless {@code rc} is {@code CL_SUCCESS}. */
  static void check(int rc) {
    if (rc != CL_SUCCESS) {
      throw new IllegalStateException(CL.stringFor_errorCode(rc));
    }
  }
}
