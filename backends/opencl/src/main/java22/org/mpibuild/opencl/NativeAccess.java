package org.mpibuild.opencl;

/** Whether this backend may call native code through the FFM API without a warning on the program's stderr. */
final class NativeAccess {
  private NativeAccess() {}

  /** Why native access is not enabled for {@code c}'s module; null where it is. */
  static String problem(Class<?> c) {
    Module module = c.getModule();
    if (module.isNativeAccessEnabled()) {
      return null;
    }
    String name = module.isNamed() ? module.getName() : "ALL-UNNAMED";
    return "native access is not enabled for " + (module.isNamed() ? name : "the class path")
        + " (java --enable-native-access=" + name + ")";
  }
}
