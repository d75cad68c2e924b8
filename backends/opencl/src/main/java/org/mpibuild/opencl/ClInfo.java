package org.mpibuild.opencl;

import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.clGetDeviceInfo;
import static org.jocl.CL.clGetPlatformInfo;
import static org.jocl.CL.clGetProgramInfo;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.jocl.CL;
import org.jocl.Pointer;
import org.jocl.cl_device_id;
import org.jocl.cl_platform_id;
import org.jocl.cl_program;

/** OpenCL's return codes checked, and its string properties read, for the backend's classes. */
final class ClInfo {
  private ClInfo() {}

  static void check(int rc, String what) {
    if (rc != CL_SUCCESS) {
      throw new IllegalStateException(what + " failed: " + CL.stringFor_errorCode(rc));
    }
  }

  /** One clGet*Info call: size query when {@code value} is null, else the value. */
  interface InfoQuery {
    int get(long size, Pointer value, long[] sizeRet);
  }

  /** Reads a string property through the usual two calls: its size, then its bytes. */
  static String infoString(String what, InfoQuery query) {
    long[] size = new long[1];
    check(query.get(0, null, size), what);
    byte[] b = new byte[(int) size[0]];
    check(query.get(b.length, Pointer.to(b), null), what);
    return cString(b);
  }

  static String platformInfo(cl_platform_id p, int param) {
    return infoString("clGetPlatformInfo", (n, v, r) -> clGetPlatformInfo(p, param, n, v, r));
  }

  static String deviceInfo(cl_device_id d, int param) {
    return infoString("clGetDeviceInfo", (n, v, r) -> clGetDeviceInfo(d, param, n, v, r));
  }

  static String programString(cl_program p, int param) {
    return infoString("clGetProgramInfo", (n, v, r) -> clGetProgramInfo(p, param, n, v, r));
  }

  static String cString(byte[] b) {
    int n = 0;
    while (n < b.length && b[n] != 0) {
      n++;
    }
    return new String(Arrays.copyOf(b, n), StandardCharsets.UTF_8).trim();
  }
}
