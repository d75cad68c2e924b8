package org.mpibuild.internal.cache;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one warning a user must see even without an SLF4J provider (a refused, unsafe cache directory): logged
 * as a warning, and, when SLF4J has no provider and would drop it, printed once on stderr.
 */
final class EssentialWarning {
  private static final Logger log = LoggerFactory.getLogger("org.mpibuild");
  private static final Set<String> PRINTED = ConcurrentHashMap.newKeySet();

  private EssentialWarning() {}

  static void print(String message) {
    log.warn(message);
    if (!hasProvider() && PRINTED.add(message)) {
      System.err.println("mpi-build: warning: " + message);
    }
  }

  /** Whether SLF4J found a logging provider (without one, it drops every message). */
  static boolean hasProvider() {
    return !(LoggerFactory.getILoggerFactory() instanceof org.slf4j.helpers.NOPLoggerFactory);
  }
}
