package org.mpibuild.spi;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The kernels of a loaded program by name, in the order of the request, for a backend's
 * {@link LoadedProgram}: lookup with a message that names what exists, and release once.
 *
 * @param <K> the backend's kernel handle ({@code cl_kernel}, {@code CUfunction})
 */
public final class NamedKernels<K> {
  private final Map<String, K> byName;
  private final String container;
  private boolean released;

  /**
   * Holds {@code kernels}.
   *
   * @param kernels the kernels by name, in order
   * @param container what holds them, for messages ({@code "program"}, {@code "module"})
   */
  public NamedKernels(Map<String, K> kernels, String container) {
    this.byName = new LinkedHashMap<>(kernels);
    this.container = container;
  }

  /** @return the first kernel, the only one for single-kernel requests */
  public K first() {
    return byName.values().iterator().next();
  }

  /**
   * Returns a kernel by name.
   *
   * @param name a name from {@link #names()}
   * @return the kernel
   * @throws IllegalArgumentException naming the kernels there are, if there is none of that name
   */
  public K get(String name) {
    K k = byName.get(name);
    if (k == null) {
      throw new IllegalArgumentException("no kernel '" + name + "' in this " + container + "; it has " + names());
    }
    return k;
  }

  /** @return the kernel names, in order */
  public List<String> names() {
    return new ArrayList<>(byName.keySet());
  }

  /** @return the kernels, in order */
  public Collection<K> all() {
    return byName.values();
  }

  /**
   * Marks the kernels released; returns whether this call did it (false if they already were), so that a
   * program's {@code close()} releases its native objects exactly once.
   *
   * @return whether the caller must release them now
   */
  public synchronized boolean release() {
    if (released) {
      return false;
    }
    released = true;
    return true;
  }
}
