package org.mpibuild.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.mpibuild.MpiBuildException;
import org.mpibuild.testkit.PublicExceptions;

/**
 * The exceptions of this module stay in the API's hierarchy (the core's {@code ExceptionHierarchyTest} holds
 * the core's): a program catches {@link DeviceFailure} as an {@link MpiBuildException}.
 */
class DeviceFailureTest {
  /** Each public exception of this module and the parent it extends: a program may catch it by that parent. */
  private static final Map<Class<?>, Class<?>> PARENTS = Map.of(DeviceFailure.class, MpiBuildException.class);

  @Test
  void eachExceptionExtendsTheParentProgramsCatchItBy() {
    PARENTS.forEach((type, parent) -> assertEquals(parent, type.getSuperclass(), type.getName()));
  }

  @Test
  void itCarriesTheDeviceApisCode() {
    DeviceFailure f = new DeviceFailure("clEnqueueReadBuffer failed: CL_OUT_OF_RESOURCES", -5);
    assertEquals(-5, f.code());
    assertEquals("clEnqueueReadBuffer failed: CL_OUT_OF_RESOURCES", f.getMessage());
  }

  @Test
  void aCallThatReturnedAnythingButZeroFailedWithItsCodeNamed() {
    DeviceFailure.check(0, "cuEventRecord", code -> "never asked");
    DeviceFailure f = assertThrows(DeviceFailure.class,
        () -> DeviceFailure.check(700, "cuEventRecord", code -> "CUDA_ERROR_ILLEGAL_ADDRESS"));
    assertEquals("cuEventRecord failed: CUDA_ERROR_ILLEGAL_ADDRESS", f.getMessage());
    assertEquals(700, f.code());
  }

  /** A new public exception of this package outside the hierarchy, or not in the table above, fails here. */
  @Test
  void everyPublicExceptionOfThePackageIsAnMpiBuildException() throws Exception {
    List<String> found = new ArrayList<>();
    for (Class<?> c : PublicExceptions.of(StreamOrderedMessages.class, "org/mpibuild/streams",
        "org/mpibuild/streams/[^/]+\\.class")) {
      found.add(c.getName());
      assertTrue(MpiBuildException.class.isAssignableFrom(c), c.getName() + " is not an MpiBuildException");
    }
    assertTrue(found.contains(DeviceFailure.class.getName()), "found the package's classes");
    TreeSet<String> listed = new TreeSet<>();
    PARENTS.keySet().forEach(c -> listed.add(c.getName()));
    assertEquals(listed, new TreeSet<>(found), "the exceptions of the package and the table above");
  }
}
