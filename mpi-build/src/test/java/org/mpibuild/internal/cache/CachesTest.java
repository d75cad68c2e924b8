package org.mpibuild.internal.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
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
        release.await();
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
      }
      written.set(e);
    });
    AtomicBoolean looked;
    AtomicBoolean closed;
    try {
      // the caller is back while the entry is still being written
      assertTrue(started.await(10, TimeUnit.SECONDS));
      assertNotSame(Thread.currentThread(), writer.get());
      assertTimeoutPreemptively(Duration.ofSeconds(5), () -> CacheStores.await("key-b"), "another key's lookup waits");
      looked = waiting(() -> CacheStores.await("key-a"));
      closed = waiting(caches::close);
      assertFalse(looked.get() || closed.get(), "a lookup of the key and the close wait for its write");
    } finally {
      release.countDown();
    }
    assertTrue(eventually(looked) && eventually(closed));
    assertSame(envelope, written.get());
  }

  /** A JVM whose main returns, or calls System.exit, while an entry is being written: the exit waits for it. */
  @Test
  void theJvmsExitWaitsForAWriteUnderWay(@TempDir Path dir) throws Exception {
    for (String how : new String[] {"return", "exit"}) {
      Path file = dir.resolve(how);
      Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
          System.getProperty("java.class.path"), ExitMain.class.getName(), file.toString(), how)
          .redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertEquals(0, p.waitFor(), out);
      assertEquals("written", Files.readString(file), how + ": " + out);
    }
  }

  /** Queues a write that takes 0.5 s, then returns from main or exits. */
  public static final class ExitMain {
    public static void main(String[] args) {
      Envelope envelope = Envelope.failure(Envelope.Status.COMPILE_FAILED, Envelope.Metadata.errorOnly("fake", "x"));
      Caches.none().whenComplete(envelope, "key", e -> {
        try {
          Thread.sleep(500);
          Files.writeString(Path.of(args[0]), "written");
        } catch (Exception ex) {
          throw new IllegalStateException(ex);
        }
      });
      if (args[1].equals("exit")) {
        System.exit(0);
      }
    }
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
