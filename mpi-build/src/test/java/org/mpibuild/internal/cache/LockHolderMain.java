package org.mpibuild.internal.cache;

import java.nio.file.Path;
import java.time.Duration;
import org.mpibuild.internal.settings.CacheSettings;
import org.mpibuild.internal.wire.Envelope;

/**
 * A second process for lock tests: takes the cache lock for a key, prints {@code LOCKED}, then either
 * holds it until killed ({@code hold}) or, after {@code millis}, writes the entry and releases it
 * ({@code write}), as a compiling job would.
 */
public final class LockHolderMain {
  private LockHolderMain() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    String key = args[1];
    long millis = Long.parseLong(args[2]);
    String mode = args[3];
    KernelCache cache = KernelCache.open(CacheSettings.in(dir).toBuilder()
        .lockStale(Duration.ofMillis(400)).lockWait(Duration.ofSeconds(30)).build());
    try (LockFile lock = cache.lock(key)) {
      if (lock == null) {
        System.out.println("NOT LOCKED");
        System.exit(3);
      }
      System.out.println("LOCKED");
      System.out.flush();
      Thread.sleep(millis);
      if (mode.equals("write")) {
        Envelope e = KernelCacheTest.envelope(500);
        cache.store(key, e);
      }
    }
    System.out.println("RELEASED");
  }
}
