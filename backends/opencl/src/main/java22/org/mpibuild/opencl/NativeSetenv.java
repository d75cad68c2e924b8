package org.mpibuild.opencl;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * {@link NativeEnvironment} through the FFM API: the C library's {@code setenv}, its handle made at the first call (about 0.1 s: not at a backend's opening, which most programs pay at every start).
 */
final class NativeSetenv implements NativeEnvironment {
  private NativeSetenv() {}

  /** The downcall handle, made when first used. */
  private static final class Handles {
    static final MethodHandle SETENV = Linker.nativeLinker().downcallHandle(
        Linker.nativeLinker().defaultLookup().find("setenv").orElseThrow(), FunctionDescriptor.of(
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));

    private Handles() {}
  }

  /**
   * Called by name from {@link NativeEnvironment.Loader}.
   *
   * @return an instance, or a String saying why there is none
   */
  public static Object open() {
    String problem = NativeAccess.problem(NativeSetenv.class);
    return problem != null ? problem : new NativeSetenv();
  }

  /** Empty, never removed: so that it is added once ({@link NativeEnvironment}). */
  @Override
  public void reset(String name) {
    set(name, "");
  }

  @Override
  public void set(String name, String value) {
    try (Arena arena = Arena.ofConfined()) {
      if ((int) Handles.SETENV.invokeExact(arena.allocateFrom(name), arena.allocateFrom(value), 1) != 0) {
        throw new IllegalStateException("setenv(" + name + ") failed");
      }
    } catch (IllegalStateException e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException("setenv(" + name + ") failed: " + e, e);
    }
  }
}
