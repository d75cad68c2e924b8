package org.mpibuild;

import java.util.Arrays;
import java.util.Objects;

/**
 * How a kernel will be launched: its work dimensions and local size, and optionally its global size and
 * offset. Immutable.
 *
 * <p>Some devices make a kernel's machine code for the launch shape at its first launch (PoCL specializes
 * the work-group function for the local size, a zero global offset and a "small grid"). Named in a
 * {@link KernelSource}, the shape is built once on the root, before the binary is read, so that no rank
 * generates code at its first launch of that shape. Shapes are part of the request: every rank must name
 * the same ones, and they are part of the cache key.
 *
 * <pre>{@code
 * KernelSource matmul = KernelSource.of(text).withKernels("mm")
 *     .withLaunchShapes(LaunchShape.of("mm", 16, 16).withGlobalSize(4096, 4096));
 * }</pre>
 *
 * <p>Values are checked when the build runs, on every rank together: a local size must be 1 to 3 positive
 * numbers; a global size or offset, when given, must have as many dimensions, and a global size must be a
 * positive multiple of the local size.
 */
public final class LaunchShape {
  private final String kernel;
  private final long[] localSize;
  private final long[] globalSize;
  private final long[] globalOffset;

  private LaunchShape(String kernel, long[] localSize, long[] globalSize, long[] globalOffset) {
    this.kernel = kernel;
    this.localSize = localSize;
    this.globalSize = globalSize;
    this.globalOffset = globalOffset;
  }

  /**
   * Returns the shape of a launch of {@code kernel} with the given local size (its length is the number of
   * work dimensions), a zero global offset, and a global size left open.
   *
   * @param kernel the kernel's name
   * @param localSize the local (work-group) size, one number per dimension
   * @return the shape
   */
  public static LaunchShape of(String kernel, long... localSize) {
    return new LaunchShape(kernel, localSize == null ? null : localSize.clone(), new long[0], new long[0]);
  }

  /**
   * Returns a copy with the global size of the launch. Without it, the grid is taken to be smaller than the
   * device's large-grid limit (on PoCL, 65,535 work-items in every dimension), as most launches are; give
   * it when a dimension is wider.
   *
   * @param globalSize the global size, one number per dimension
   * @return the new shape
   */
  public LaunchShape withGlobalSize(long... globalSize) {
    return new LaunchShape(kernel, localSize, globalSize == null ? null : globalSize.clone(), globalOffset);
  }

  /**
   * Returns a copy with the global offset of the launch; zero in every dimension unless given.
   *
   * @param globalOffset the global offset, one number per dimension
   * @return the new shape
   */
  public LaunchShape withGlobalOffset(long... globalOffset) {
    return new LaunchShape(kernel, localSize, globalSize, globalOffset == null ? null : globalOffset.clone());
  }

  /**
   * Returns the kernel's name.
   *
   * @return the name, as given
   */
  public String kernel() {
    return kernel;
  }

  /**
   * Returns the local size.
   *
   * @return a copy, one number per dimension (null if null was given)
   */
  public long[] localSize() {
    return localSize == null ? null : localSize.clone();
  }

  /**
   * Returns the global size, if one was given.
   *
   * @return a copy, one number per dimension; empty when none was given (null if null was given)
   */
  public long[] globalSize() {
    return globalSize == null ? null : globalSize.clone();
  }

  /**
   * Returns the global offset.
   *
   * @return a copy, one number per dimension; empty means zero (null if null was given)
   */
  public long[] globalOffset() {
    return globalOffset == null ? null : globalOffset.clone();
  }

  /**
   * Returns the number of work dimensions: the length of the local size.
   *
   * @return 1 to 3 for a valid shape
   */
  public int dimensions() {
    return localSize == null ? 0 : localSize.length;
  }

  /**
   * Whether the global offset is zero in every dimension.
   *
   * @return true when no offset, or a zero one, was given
   */
  public boolean zeroOffset() {
    return globalOffset == null || Arrays.stream(globalOffset).allMatch(o -> o == 0);
  }

  /**
   * Returns the shape as text that names every value, for example {@code mm 16x16 global 4096x4096}; a
   * build that rejects the shape quotes it.
   *
   * @return the text
   */
  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder(String.valueOf(kernel)).append(' ').append(dims(localSize));
    if (globalSize == null || globalSize.length > 0) {
      sb.append(" global ").append(dims(globalSize));
    }
    if (globalOffset == null || globalOffset.length > 0) {
      sb.append(" offset ").append(dims(globalOffset));
    }
    return sb.toString();
  }

  private static String dims(long[] v) {
    if (v == null) {
      return "null";
    }
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < v.length; i++) {
      sb.append(i == 0 ? "" : "x").append(v[i]);
    }
    return v.length == 0 ? "()" : sb.toString();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof LaunchShape s
        && Objects.equals(kernel, s.kernel)
        && Arrays.equals(localSize, s.localSize)
        && Arrays.equals(globalSize, s.globalSize)
        && Arrays.equals(globalOffset, s.globalOffset);
  }

  @Override
  public int hashCode() {
    return Objects.hash(kernel, Arrays.hashCode(localSize), Arrays.hashCode(globalSize), Arrays.hashCode(globalOffset));
  }
}
