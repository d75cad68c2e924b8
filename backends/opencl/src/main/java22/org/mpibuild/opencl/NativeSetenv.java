package org.mpibuild.opencl;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/** {@link NativeEnvironment} through the FFM API: the C library's {@code setenv} and {@code unsetenv}. */
final class NativeSetenv implements NativeEnvironment {
  private final MethodHandle setenv;
  private final MethodHandle unsetenv;

  private NativeSetenv() {
    Linker linker = Linker.nativeLinker();
    setenv = linker.downcallHandle(linker.defaultLookup().find("setenv").orElseThrow(), FunctionDescriptor.of(
        ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    unsetenv = linker.downcallHandle(linker.defaultLookup().find("unsetenv").orElseThrow(), FunctionDescriptor.of(
        ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
  }

  /**
   * Called by name from {@link NativeEnvironment.Loader}.
   *
   * @return an instance, or a String saying why there is none
   */
  public static Object open() {
    Module module = NativeSetenv.class.getModule();
    if (!module.isNativeAccessEnabled()) {
      String name = module.isNamed() ? module.getName() : "ALL-UNNAMED";
      return "native access is not enabled for " + (module.isNamed() ? name : "the class path")
          + " (java --enable-native-access=" + name + ")";
    }
    try {
      return new NativeSetenv();
    } catch (RuntimeException e) {
      return "setenv could not be found: " + e;
    }
  }

  @Override
  public void set(String name, String value) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment n = arena.allocateFrom(name);
      int status = value == null ? (int) unsetenv.invokeExact(n)
          : (int) setenv.invokeExact(n, arena.allocateFrom(value), 1);
      if (status != 0) {
        throw new IllegalStateException((value == null ? "unsetenv(" : "setenv(") + name + ") failed");
      }
    } catch (IllegalStateException e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException((value == null ? "unsetenv(" : "setenv(") + name + ") failed: " + e, e);
    }
  }
}
