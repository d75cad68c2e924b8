package org.mpibuild;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * What to build: the kernel source, the names of the kernels to create from it, the compiler options,
 * and the launch shapes to build finished machine code for. Immutable.
 *
 * <p>In a collective build every rank must pass an equal {@code KernelSource}. Values are checked when
 * the build runs, on every rank together, not when this object is made: a bad value on one rank then
 * fails the build on every rank with the same error, instead of leaving the other ranks waiting.
 *
 * <pre>{@code
 * KernelSource saxpy = KernelSource.of(text).withKernels("saxpy").withOptions("-cl-fast-relaxed-math")
 *     .withLaunchShapes(LaunchShape.of("saxpy", 256));
 * }</pre>
 */
public final class KernelSource {
  private final String source;
  private final List<String> kernelNames;
  private final String options;
  private final List<LaunchShape> launchShapes;

  private KernelSource(String source, List<String> kernelNames, String options, List<LaunchShape> launchShapes) {
    this.source = source;
    this.kernelNames = kernelNames;
    this.options = options;
    this.launchShapes = launchShapes;
  }

  /**
   * Returns a request for the given source, with no options, that creates every kernel the source
   * defines.
   *
   * @param source the kernel source text (OpenCL C for the OpenCL backend)
   * @return the request
   */
  public static KernelSource of(String source) {
    return new KernelSource(source, List.of(), "", List.of());
  }

  /**
   * Returns a copy that creates exactly the named kernels. Each name must be defined by the source.
   *
   * @param names kernel names, in the order the program wants them
   * @return the new request
   */
  public KernelSource withKernels(String... names) {
    return new KernelSource(source, names == null ? null : Collections.unmodifiableList(Arrays.asList(names.clone())), options,
        launchShapes);
  }

  /**
   * Returns a copy that creates exactly the named kernels.
   *
   * @param names kernel names
   * @return the new request
   */
  public KernelSource withKernels(List<String> names) {
    return new KernelSource(source, names == null ? null : Collections.unmodifiableList(new ArrayList<>(names)), options,
        launchShapes);
  }

  /**
   * Returns a copy with the given compiler options, for example {@code "-D TILE=16 -cl-mad-enable"}.
   *
   * @param options the options, passed to the compiler as given
   * @return the new request
   */
  public KernelSource withOptions(String options) {
    return new KernelSource(source, kernelNames, options, launchShapes);
  }

  /**
   * Returns a copy that builds finished machine code for the given launch shapes, replacing any named
   * before. Without shapes, a device that specializes code for the launch (PoCL) makes it on every rank at
   * the kernel's first launch of each shape; see {@link LaunchShape}.
   *
   * @param shapes the launches the program will make
   * @return the new request
   */
  public KernelSource withLaunchShapes(LaunchShape... shapes) {
    return new KernelSource(source, kernelNames, options,
        shapes == null ? null : Collections.unmodifiableList(Arrays.asList(shapes.clone())));
  }

  /**
   * Returns a copy that builds finished machine code for the given launch shapes, replacing any named
   * before.
   *
   * @param shapes the launches the program will make
   * @return the new request
   */
  public KernelSource withLaunchShapes(List<LaunchShape> shapes) {
    return new KernelSource(source, kernelNames, options,
        shapes == null ? null : Collections.unmodifiableList(new ArrayList<>(shapes)));
  }

  /**
   * Returns the source text.
   *
   * @return the source, as given (may be null or empty until checked by a build)
   */
  public String source() {
    return source;
  }

  /**
   * Returns the requested kernel names; empty means every kernel the source defines.
   *
   * @return an unmodifiable list (may be null if null was given)
   */
  public List<String> kernelNames() {
    return kernelNames;
  }

  /**
   * Returns the compiler options.
   *
   * @return the options, as given
   */
  public String options() {
    return options;
  }

  /**
   * Returns the launch shapes to build finished code for; empty when none were named.
   *
   * @return an unmodifiable list (may be null if null was given)
   */
  public List<LaunchShape> launchShapes() {
    return launchShapes;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof KernelSource k
        && Objects.equals(source, k.source)
        && Objects.equals(kernelNames, k.kernelNames)
        && Objects.equals(options, k.options)
        && Objects.equals(launchShapes, k.launchShapes);
  }

  @Override
  public int hashCode() {
    return Objects.hash(source, kernelNames, options, launchShapes);
  }

  @Override
  public String toString() {
    int length = source == null ? 0 : source.length();
    return "KernelSource[" + length + " chars, kernels=" + kernelNames + ", options='" + options + "'"
        + (launchShapes != null && launchShapes.isEmpty() ? "" : ", shapes=" + launchShapes) + "]";
  }
}
