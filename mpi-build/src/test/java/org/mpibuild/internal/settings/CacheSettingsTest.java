package org.mpibuild.internal.settings;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class CacheSettingsTest {
  private static final CacheSettings BASE = CacheSettings.in(Path.of("/c"));

  /** A copy with nothing changed is equal to the original. */
  @Test
  void aCopyWithNothingChangedIsEqual() {
    assertEquals(BASE, BASE.toBuilder().build());
  }

  /** Each of the builder's setters changes its own value and no other: a setter wired to the wrong field fails. */
  @Test
  void eachSetterChangesOnlyItsValue() {
    Path p = Path.of("/other");
    Duration d = Duration.ofSeconds(7);
    CacheSettings b = BASE;
    assertEquals(new CacheSettings(CacheSettings.Access.READ_ONLY, b.dir(), b.maxBytes(), b.shared(), b.lockStale(),
        b.lockWait(), b.negativeTtl(), b.nodeDir(), b.signingKey(), b.trustedKeys()),
        b.toBuilder().access(CacheSettings.Access.READ_ONLY).build());
    assertEquals(new CacheSettings(b.access(), p, b.maxBytes(), b.shared(), b.lockStale(), b.lockWait(),
        b.negativeTtl(), b.nodeDir(), b.signingKey(), b.trustedKeys()), b.toBuilder().dir(p).build());
    assertEquals(new CacheSettings(b.access(), b.dir(), 5, b.shared(), b.lockStale(), b.lockWait(), b.negativeTtl(),
        b.nodeDir(), b.signingKey(), b.trustedKeys()), b.toBuilder().maxBytes(5).build());
    assertEquals(new CacheSettings(b.access(), b.dir(), b.maxBytes(), true, b.lockStale(), b.lockWait(),
        b.negativeTtl(), b.nodeDir(), b.signingKey(), b.trustedKeys()), b.toBuilder().shared(true).build());
    assertEquals(new CacheSettings(b.access(), b.dir(), b.maxBytes(), b.shared(), d, b.lockWait(), b.negativeTtl(),
        b.nodeDir(), b.signingKey(), b.trustedKeys()), b.toBuilder().lockStale(d).build());
    assertEquals(new CacheSettings(b.access(), b.dir(), b.maxBytes(), b.shared(), b.lockStale(), d, b.negativeTtl(),
        b.nodeDir(), b.signingKey(), b.trustedKeys()), b.toBuilder().lockWait(d).build());
    assertEquals(new CacheSettings(b.access(), b.dir(), b.maxBytes(), b.shared(), b.lockStale(), b.lockWait(), d,
        b.nodeDir(), b.signingKey(), b.trustedKeys()), b.toBuilder().negativeTtl(d).build());
    assertEquals(new CacheSettings(b.access(), b.dir(), b.maxBytes(), b.shared(), b.lockStale(), b.lockWait(),
        b.negativeTtl(), p, b.signingKey(), b.trustedKeys()), b.toBuilder().nodeDir(p).build());
    assertEquals(new CacheSettings(b.access(), b.dir(), b.maxBytes(), b.shared(), b.lockStale(), b.lockWait(),
        b.negativeTtl(), b.nodeDir(), p, b.trustedKeys()), b.toBuilder().signingKey(p).build());
    assertEquals(new CacheSettings(b.access(), b.dir(), b.maxBytes(), b.shared(), b.lockStale(), b.lockWait(),
        b.negativeTtl(), b.nodeDir(), b.signingKey(), p), b.toBuilder().trustedKeys(p).build());
  }

  /** The builder checks nothing itself: a bad value is refused by the record's constructor, as before. */
  @Test
  void aBadValueIsRefusedByTheConstructor() {
    assertThrows(IllegalArgumentException.class, () -> BASE.toBuilder().maxBytes(0).build());
    assertThrows(IllegalArgumentException.class, () -> BASE.toBuilder().lockStale(Duration.ZERO).build());
  }

  /** A cache that is off is the defaults of {@code in(".")} with access off. */
  @Test
  void offIsTheDefaultsWithAccessOff() {
    CacheSettings off = CacheSettings.off();
    CacheSettings in = CacheSettings.in(Path.of("."));
    assertEquals(CacheSettings.Access.OFF, off.access());
    assertEquals(new CacheSettings(CacheSettings.Access.OFF, Path.of("."), CacheSettings.DEFAULT_MAX_BYTES, false,
        Duration.ofSeconds(60), Duration.ofMinutes(10), Duration.ZERO, null, in.signingKey(), in.trustedKeys()), off);
  }
}
