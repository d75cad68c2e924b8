package org.mpibuild.internal.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.mpibuild.internal.wire.Envelope;

/** A cache store after a build: on a thread of its own, off the caller's path, and waited for before a lookup. */
class CachesTest {
  @Test
  void aStoreRunsOnAThreadOfItsOwnAndTheNextLookupAndTheCloseWaitForIt() throws Exception {
    Envelope envelope = Envelope.failure(Envelope.Status.COMPILE_FAILED, Envelope.Metadata.errorOnly("fake", "x"));
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch started = new CountDownLatch(1);
    AtomicReference<Thread> storer = new AtomicReference<>();
    AtomicReference<Envelope> stored = new AtomicReference<>();
    Caches caches = Caches.none();
    caches.whenComplete(envelope, e -> {
      storer.set(Thread.currentThread());
      started.countDown();
      try {
        release.await(10, TimeUnit.SECONDS);
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
      }
      stored.set(e);
    });
    // the caller is back before the store has even finished
    assertTrue(started.await(10, TimeUnit.SECONDS));
    assertNotSame(Thread.currentThread(), storer.get());
    assertFalse(storer.get().isDaemon(), "the JVM's exit waits for a store under way");
    AtomicBoolean looked = new AtomicBoolean();
    Thread lookup = new Thread(() -> {
      Caches.awaitStores();
      looked.set(true);
    });
    lookup.start();
    lookup.join(200);
    assertFalse(looked.get(), "a lookup waits for the store under way");
    release.countDown();
    lookup.join(10_000);
    assertTrue(looked.get());
    assertSame(envelope, stored.get());
    caches.close(); // nothing left to wait for
    assertEquals(Thread.State.TERMINATED, storer.get().getState());
  }
}
