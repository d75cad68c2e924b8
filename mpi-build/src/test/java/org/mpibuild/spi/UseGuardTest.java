package org.mpibuild.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The open or closed state that keeps released native handles away from native code. */
class UseGuardTest {
  @Test
  void aUseAfterCloseThrowsNamingWhatAndWhy() {
    UseGuard g = new UseGuard("kernel saxpy");
    g.enter().close();
    assertTrue(g.close("its MpiBuild was closed"));
    IllegalStateException e = assertThrows(IllegalStateException.class, g::enter);
    assertEquals("kernel saxpy: its MpiBuild was closed", e.getMessage());
    assertEquals("kernel saxpy: its MpiBuild was closed",
        assertThrows(IllegalStateException.class, g::check).getMessage());
  }

  @Test
  void onlyTheFirstCloseReleasesAndTheFirstReasonStays() {
    UseGuard g = new UseGuard("kernel saxpy");
    assertTrue(g.close("it was closed"));
    assertFalse(g.close("its MpiBuild was closed"));
    assertEquals("kernel saxpy: it was closed", assertThrows(IllegalStateException.class, g::check).getMessage());
  }

  @Test
  void closeWaitsForAUseOnAnotherThreadBeforeItReturns() throws Exception {
    UseGuard g = new UseGuard("kernel saxpy");
    CountDownLatch inside = new CountDownLatch(1);
    CountDownLatch leave = new CountDownLatch(1);
    CompletableFuture<Void> user = CompletableFuture.runAsync(() -> {
      try (UseGuard.Use ignored = g.enter()) {
        inside.countDown();
        leave.await();
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
    });
    assertTrue(inside.await(5, TimeUnit.SECONDS));
    CompletableFuture<Boolean> closer = CompletableFuture.supplyAsync(() -> g.close("it was closed"));
    // closed at once for new uses, but the release waits for the use in progress
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!g.isClosed() && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertTrue(g.isClosed());
    assertThrows(IllegalStateException.class, g::enter);
    Thread.sleep(100);
    assertFalse(closer.isDone(), "close returned while a use was in progress on another thread");
    leave.countDown();
    user.get(5, TimeUnit.SECONDS);
    assertTrue(closer.get(5, TimeUnit.SECONDS));
  }

  @Test
  void aUseOnTheClosingThreadDoesNotBlockTheClose() {
    UseGuard g = new UseGuard("messenger");
    try (UseGuard.Use ignored = g.enter()) {
      assertTrue(g.close("it was closed"));
    }
  }

  @Test
  void dependentsCloseWithTheOwnersReasonAndForgottenOnesDoNot() {
    UseGuard owner = new UseGuard("OpenCL context and command queue");
    List<String> closed = new ArrayList<>();
    UseGuard.Dependent a = why -> closed.add("a: " + why);
    UseGuard.Dependent b = why -> closed.add("b: " + why);
    owner.adopt(a);
    owner.adopt(b);
    owner.forget(b);
    owner.close("its MpiBuild was closed");
    assertEquals(List.of("a: its MpiBuild was closed"), closed);
    // made after the owner closed: closed at once, and the maker is told
    UseGuard.Dependent c = why -> closed.add("c: " + why);
    assertThrows(IllegalStateException.class, () -> owner.adopt(c));
    assertEquals("c: its MpiBuild was closed", closed.get(1));
  }
}
