package org.mpibuild.cuda;

import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetAttribute;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;

import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;

/**
 * This rank's GPU: the device, its primary context (retained until {@link #release()}) and its architecture.
 *
 * @param ordinal the device's ordinal on its node
 * @param device the device
 * @param context its primary context
 * @param arch its architecture, {@code sm_XY}
 */
record CudaDevice(int ordinal, CUdevice device, CUcontext context, String arch) {

  /**
   * Takes the device of this ordinal, reads its compute capability and retains its primary context. The driver
   * must be initialized ({@link DeviceProbe}).
   *
   * @param ordinal the device's ordinal, in {@code [0, device count)}
   * @return the device
   */
  static CudaDevice open(int ordinal) {
    CUdevice device = new CUdevice();
    CudaKernel.check(cuDeviceGet(device, ordinal), "cuDeviceGet");
    int[] major = new int[1];
    int[] minor = new int[1];
    cuDeviceGetAttribute(major, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    cuDeviceGetAttribute(minor, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    CUcontext context = new CUcontext();
    CudaKernel.check(cuDevicePrimaryCtxRetain(context, device), "cuDevicePrimaryCtxRetain");
    return new CudaDevice(ordinal, device, context, arch(major[0], minor[0]));
  }

  /**
   * The architecture of a compute capability.
   *
   * @param major its major version
   * @param minor its minor version
   * @return {@code sm_} and both, for example {@code sm_90} for 9.0
   */
  static String arch(int major, int minor) {
    return "sm_" + major + minor;
  }

  /** Releases the primary context retained by {@link #open}. */
  void release() {
    cuDevicePrimaryCtxRelease(device);
  }
}
