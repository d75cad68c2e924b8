package org.mpibuild.internal.comm;

import java.util.Map;
import java.util.concurrent.Callable;
import org.slf4j.MDC;

/** Puts the rank into SLF4J's MDC ({@code mpi.rank}) for the duration of a library call. */
public final class LogContext implements AutoCloseable {
  /** The MDC key; a Logback pattern shows it with {@code %X{mpi.rank}}. */
  public static final String RANK_KEY = "mpi.rank";
  private final String previous;

  private LogContext(int rank) {
    previous = MDC.get(RANK_KEY);
    MDC.put(RANK_KEY, Integer.toString(rank));
  }

  /** Sets the rank until {@link #close()}. */
  public static LogContext rank(int rank) {
    return new LogContext(rank);
  }

  /**
   * {@code task}, run on another thread with the MDC of the thread that calls this (the rank, in its log lines),
   * and that thread's own MDC back afterwards.
   */
  public static <T> Callable<T> carried(Callable<T> task) {
    Map<String, String> caller = MDC.getCopyOfContextMap();
    return () -> {
      Map<String, String> own = MDC.getCopyOfContextMap();
      set(caller);
      try {
        return task.call();
      } finally {
        set(own);
      }
    };
  }

  private static void set(Map<String, String> context) {
    if (context == null) {
      MDC.clear();
    } else {
      MDC.setContextMap(context);
    }
  }

  @Override
  public void close() {
    if (previous == null) {
      MDC.remove(RANK_KEY);
    } else {
      MDC.put(RANK_KEY, previous);
    }
  }
}
