package org.mpibuild.opencl;

import static org.jocl.CL.CL_DEVICE_MAX_WORK_GROUP_SIZE;
import static org.jocl.CL.CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS;
import static org.jocl.CL.CL_DEVICE_MAX_WORK_ITEM_SIZES;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.clGetDeviceInfo;

import java.util.Arrays;
import java.util.List;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_device_id;
import org.mpibuild.LaunchShape;

/**
 * A device's limits on a work-group ({@code CL_DEVICE_MAX_WORK_GROUP_SIZE}, {@code CL_DEVICE_MAX_WORK_ITEM_SIZES}),
 * against which launch shapes are checked before anything is compiled: a shape the device cannot launch would
 * otherwise be built, shipped and refused at its first launch ({@code CL_INVALID_WORK_GROUP_SIZE}), or crash the
 * compiler (PoCL asserts on a local size of 2^32).
 */
record WorkGroupLimits(long maxWorkGroupSize, long[] maxWorkItemSizes) {
  /** The limits of {@code device}; null where the driver does not report them. */
  static WorkGroupLimits of(cl_device_id device) {
    long[] size = new long[1];
    int[] dims = new int[1];
    if (clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_GROUP_SIZE, Sizeof.size_t, Pointer.to(size), null) != CL_SUCCESS
        || clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, Sizeof.cl_uint, Pointer.to(dims), null) != CL_SUCCESS
        || dims[0] < 1) {
      return null;
    }
    long[] items = new long[dims[0]];
    if (clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_SIZES, Sizeof.size_t * (long) items.length, Pointer.to(items),
        null) != CL_SUCCESS) {
      return null;
    }
    return new WorkGroupLimits(size[0], items);
  }

  /** The first shape this device cannot launch, said with the limit it breaks; null if every one fits. */
  String problem(List<LaunchShape> shapes) {
    for (LaunchShape s : shapes) {
      long[] local = s.localSize();
      String what = "launch shape '" + s + "'";
      if (local.length > maxWorkItemSizes.length) {
        return what + ": " + local.length + " dimensions, this device has " + maxWorkItemSizes.length;
      }
      long items = 1;
      for (int d = 0; d < local.length; d++) {
        if (local[d] > maxWorkItemSizes[d]) {
          return what + ": local size " + local[d] + " in dimension " + d + " exceeds this device's maximum of "
              + maxWorkItemSizes[d] + " (CL_DEVICE_MAX_WORK_ITEM_SIZES " + Arrays.toString(maxWorkItemSizes) + ")";
        }
        items *= local[d]; // no overflow: each factor is at most a device limit
      }
      if (items > maxWorkGroupSize) {
        return what + ": a work-group of " + items + " work-items exceeds this device's maximum of " + maxWorkGroupSize
            + " (CL_DEVICE_MAX_WORK_GROUP_SIZE)";
      }
    }
    return null;
  }
}
