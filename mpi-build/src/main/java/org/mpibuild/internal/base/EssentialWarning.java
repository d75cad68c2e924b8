package org.mpibuild.internal.base;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.helpers.NOPLoggerFactory;

/**
 * A warning a user must see even without an SLF4J provider (a refused cache directory, a misspelt setting,
 * a GPU without machine code): logged as a warning on {@code org.mpibuild}, and, when SLF4J has no
 * provider and would drop it, printed once on stderr as {@code mpi-build: warning: ...}. The core uses it for
 * every such warning, so that none depends on how the program set up logging.
 */
public final class EssentialWarning {
  private static final Logger log = LoggerFactory.getLogger("org.mpibuild");
  private static final Set<String> PRINTED = ConcurrentHashMap.newKeySet();

  private EssentialWarning() {}

  /**
   * Logs {@code message} as a warning, and prints it on stderr once per JVM when SLF4J has no provider.
   *
   * @param message the whole warning, naming the value or file at fault and what to do about it
   */
  public static void print(String message) {
    log.warn(message);
    if (!hasProvider() && PRINTED.add(message)) {
      System.err.println("mpi-build: warning: " + message);
    }
  }

  /**
   * Whether SLF4J found a logging provider (without one, it drops every message).
   *
   * @return true when SLF4J logs somewhere
   */
  public static boolean hasProvider() {
    return !(LoggerFactory.getILoggerFactory() instanceof NOPLoggerFactory);
  }
}
