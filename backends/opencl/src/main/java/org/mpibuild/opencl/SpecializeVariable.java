package org.mpibuild.opencl;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code POCL_BINARY_SPECIALIZE_WG} in this process, as PoCL sees it: the specializations its binary query builds
 * for every kernel of the program queried. PoCL 6.0 and later read it with {@code getenv} at each query. PoCL 3.1
 * to 5.0 keep the first value they find for the life of the process ({@code pocl_runtime_config.c},
 * {@code find_env}, a {@code strdup}; a variable not set is not kept): there every later query builds the first
 * value's shapes, whatever the variable says then, so a compile here may only name shapes among them
 * ({@link #refused}), sets that value again ({@link #shapesToSet}), and has the shapes it does not name for a kernel
 * linked to stand-ins. Set and taken back under {@link NativeEnvironment#LOCK}, which every binary query of the
 * process holds.
 */
final class SpecializeVariable {
  private static final Logger LOG = LoggerFactory.getLogger(SpecializeVariable.class);
  static final String NAME = "POCL_BINARY_SPECIALIZE_WG";
  /** The first PoCL release that reads its settings at each use. */
  static final int FIRST_MAJOR = 6;
  static final Pattern POCL_VERSION = Pattern.compile("PoCL (\\d+)\\.(\\d+)");
  /** The shapes of this process's first query with the variable set, set then: what PoCL before 6.0 keeps. */
  private static final AtomicReference<List<String>> FIRST_VALUE = new AtomicReference<>();
  /** Set where the variable could not be taken back after a query: then no more compiles run here. */
  private static final AtomicBoolean LEFT_SET = new AtomicBoolean();
  private static final String LEFT_SET_REASON = NAME + " could not be taken back after a query";
  private static final String KEPT_REASON = "PoCL before 6.0 keeps the value of " + NAME + " that the first compile "
      + "here set";

  private SpecializeVariable() {}

  /** Whether the PoCL of {@code platformVersion} keeps the first value it reads of a variable (before 6.0). */
  static boolean keepsFirstValue(String platformVersion) {
    Matcher m = POCL_VERSION.matcher(platformVersion);
    return !m.find() || Integer.parseInt(m.group(1)) < FIRST_MAJOR;
  }

  /**
   * Why a binary query in this process may now build functions nobody asked it for: the variable was left set, or
   * PoCL before 6.0 may keep the shapes a compile here set; null where it builds only what the query sets.
   */
  static String closed(OpenClBackend backend) {
    return LEFT_SET.get() ? LEFT_SET_REASON : kept(backend) != null ? KEPT_REASON : null;
  }

  /**
   * Why a compile of the specializations {@code union} cannot run in this process now: the variable was left set,
   * or, on PoCL before 6.0, a shape outside the value PoCL keeps; null where it can.
   */
  static String refused(OpenClBackend backend, List<String> union) {
    if (LEFT_SET.get()) {
      return LEFT_SET_REASON;
    }
    List<String> first = kept(backend);
    if (first == null || first.containsAll(union)) {
      return null;
    }
    List<String> outside = new ArrayList<>(union);
    outside.removeAll(first);
    return KEPT_REASON + " (" + first + "), which does not name " + outside;
  }

  /**
   * What the variable is set to for a compile of the specializations {@code union}, of a request that names
   * {@code requestUnion} in all (the same, but for a part of a shared compile): {@code union} on PoCL 6.0 and later;
   * before, the value PoCL keeps, or, to be kept, the whole request's, so that a later part of another request with
   * the same shapes, dealt to this rank otherwise, still fits in it.
   */
  static List<String> shapesToSet(OpenClBackend backend, List<String> union, List<String> requestUnion) {
    if (!keepsFirstValue(backend.compilerIdentity())) {
      return union;
    }
    List<String> first = FIRST_VALUE.get();
    return first != null ? first : requestUnion;
  }

  /** The value PoCL keeps, on a release that keeps one and once a query read it; else null. */
  private static List<String> kept(OpenClBackend backend) {
    return keepsFirstValue(backend.compilerIdentity()) ? FIRST_VALUE.get() : null;
  }

  /**
   * Sets the variable to {@code shapes} ({@link #shapesToSet}) for the binary query that follows, holding
   * {@link NativeEnvironment#LOCK}; the first value so set is the one PoCL before 6.0 keeps.
   *
   * @throws IllegalStateException if it cannot be set (nothing is then set)
   */
  static void set(NativeEnvironment environment, List<String> shapes) {
    assert Thread.holdsLock(NativeEnvironment.LOCK);
    environment.set(NAME, String.join(",", shapes));
    FIRST_VALUE.compareAndSet(null, List.copyOf(shapes));
  }

  /** The variable back to PoCL's default; where it cannot be, no more compiles here (a WARN line says why). */
  static void takeBack(NativeEnvironment environment) {
    try {
      environment.reset(NAME);
    } catch (IllegalStateException e) {
      LEFT_SET.set(true);
      LOG.warn("{} could not be taken back after a compile in this process ({}); the next compiles run in compile "
          + "processes", NAME, e.getMessage());
    }
  }
}
