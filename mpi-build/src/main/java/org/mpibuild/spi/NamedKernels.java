package org.mpibuild.spi;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The kernels of a loaded program by name, in the order of the request, for a backend's
 * {@link LoadedProgram}: lookup with a message that names what exists, and release once. After
 * {@link #release(String)}, every lookup throws {@code IllegalStateException} naming the kernels and why
 * (for example "kernel saxpy: its MpiBuild was closed"), so that a released handle is never handed out.
 *
 * @param <K> the backend's kernel handle ({@code cl_kernel}, {@code CUfunction})
 */
public final class NamedKernels<K> {
  private final Map<String, K> byName;
  private final String container;
  private final UseGuard guard;

  /**
   * Holds {@code kernels}.
   *
   * @param kernels the kernels by name, in order
   * @param container what holds them, for messages ({@code "program"}, {@code "module"})
   */
  public NamedKernels(Map<String, K> kernels, String container) {
    this.byName = new LinkedHashMap<>(kernels);
    this.container = container;
    this.guard = new UseGuard(describe(byName.keySet()));
  }

  /**
   * Names kernels for messages: {@code "kernel saxpy"}, {@code "kernels add, scale"}.
   *
   * @param names the kernel names
   * @return the description
   */
  public static String describe(Collection<String> names) {
    return (names.size() == 1 ? "kernel " : "kernels ") + String.join(", ", names);
  }

  /**
   * Returns the guard of these kernels: a backend runs its own native calls on them (a launch) inside
   * {@link UseGuard#enter()}, so that a release waits for them.
   *
   * @return the guard
   */
  public UseGuard guard() {
    return guard;
  }

  /**
   * Returns the first kernel.
   *
   * @return the first kernel, the only one for single-kernel requests
   * @throws IllegalStateException if the kernels were released, saying why
   */
  public K first() {
    guard.check();
    return byName.values().iterator().next();
  }

  /**
   * Returns a kernel by name.
   *
   * @param name a name from {@link #names()}
   * @return the kernel
   * @throws IllegalArgumentException naming the kernels there are, if there is none of that name
   * @throws IllegalStateException if the kernels were released, saying why
   */
  public K get(String name) {
    guard.check();
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
   * Marks the kernels released because their program was closed; see {@link #release(String)}.
   *
   * @return whether the caller must release them now
   */
  public boolean release() {
    return release("it was closed");
  }

  /**
   * Marks the kernels released, waits for the uses in progress on other threads (see {@link UseGuard}),
   * and returns whether this call did it (false if they already were), so that a program's
   * {@code close()} releases its native objects exactly once.
   *
   * @param why what later lookups will be told, for example "its MpiBuild was closed"
   * @return whether the caller must release them now
   */
  public boolean release(String why) {
    return guard.close(why);
  }

  /**
   * Throws if the kernels were released.
   *
   * @throws IllegalStateException naming the kernels and why
   */
  public void check() {
    guard.check();
  }
}
