package org.mpibuild.internal.cache;

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

/**
 * An entry written after its build: on the thread that writes entries, off the caller's path; a lookup of its key
 * and the close of the caches that queued it wait for it, a lookup of another key does not.
 */
class CachesTest {
  @Test
  void anEntryIsWrittenOffTheCallersPathAndALookupOfItsKeyAndTheCloseWaitForIt() throws Exception {
    Envelope envelope = Envelope.failure(Envelope.Status.COMPILE_FAILED, Envelope.Metadata.errorOnly("fake", "x"));
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch started = new CountDownLatch(1);
    AtomicReference<Thread> writer = new AtomicReference<>();
    AtomicReference<Envelope> written = new AtomicReference<>();
    Caches caches = Caches.none();
    caches.whenComplete(envelope, "key-a", e -> {
      writer.set(Thread.currentThread());
      started.countDown();
      try {
        release.await(10, TimeUnit.SECONDS);
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
      }
      written.set(e);
    });
    // the caller is back while the entry is still being written
    assertTrue(started.await(10, TimeUnit.SECONDS));
    assertNotSame(Thread.currentThread(), writer.get());
    CacheStores.await("key-b"); // another key's lookup does not wait
    AtomicBoolean looked = waiting(() -> CacheStores.await("key-a"));
    AtomicBoolean closed = waiting(caches::close);
    assertFalse(looked.get() || closed.get(), "a lookup of the key and the close wait for its write");
    release.countDown();
    assertTrue(eventually(looked) && eventually(closed));
    assertSame(envelope, written.get());
  }

  private static AtomicBoolean waiting(Runnable r) throws InterruptedException {
    AtomicBoolean done = new AtomicBoolean();
    Thread t = new Thread(() -> {
      r.run();
      done.set(true);
    });
    t.setDaemon(true);
    t.start();
    t.join(200);
    return done;
  }

  private static boolean eventually(AtomicBoolean b) throws InterruptedException {
    for (int i = 0; i < 1000 && !b.get(); i++) {
      Thread.sleep(10);
    }
    return b.get();
  }
}
