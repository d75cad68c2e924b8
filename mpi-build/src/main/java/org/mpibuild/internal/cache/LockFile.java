package org.mpibuild.internal.cache;

import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A cache lock: one file per key, created atomically ({@code O_EXCL}), holding its holder's host, pid and
 * process start time. While held, a heartbeat refreshes its modification time, so a long compile never
 * looks stale. Closing it stops the heartbeat and deletes the file.
 */
public final class LockFile implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(LockFile.class);
  private static final ScheduledExecutorService HEARTBEATS = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "mpi-build-cache-heartbeat");
    t.setDaemon(true);
    return t;
  });

  /** Who holds a lock, as written in the lock file. */
  public record Holder(String host, long pid, long startMillis, long acquiredMillis) {

    /** This process. */
    static Holder self() {
      ProcessHandle me = ProcessHandle.current();
      return new Holder(hostName(), me.pid(), processStart(me), System.currentTimeMillis());
    }

    String serialize() {
      return "host=" + host + "\npid=" + pid + "\nstart=" + startMillis + "\nacquired=" + acquiredMillis + "\n";
    }

    static Holder parse(String text) {
      Properties p = new Properties();
      try {
        p.load(new StringReader(text));
        return new Holder(p.getProperty("host", "?"), Long.parseLong(p.getProperty("pid", "-1")),
            Long.parseLong(p.getProperty("start", "0")), Long.parseLong(p.getProperty("acquired", "0")));
      } catch (IOException | NumberFormatException e) {
        return new Holder("?", -1, 0, 0);
      }
    }

    /**
     * Whether the holder is a process of this host that no longer runs. A pid reused by another process
     * counts as dead: its start time differs.
     */
    boolean deadOnThisHost() {
      if (!host.equals(hostName())) {
        return false;
      }
      Optional<ProcessHandle> p = ProcessHandle.of(pid);
      if (p.isEmpty() || !p.get().isAlive()) {
        return true;
      }
      long start = processStart(p.get());
      return startMillis != 0 && start != 0 && Math.abs(start - startMillis) > 1000;
    }

    @Override
    public String toString() {
      return "pid " + pid + " on " + host + " since " + Instant.ofEpochMilli(acquiredMillis);
    }
  }

  private final Path file;
  private final ScheduledFuture<?> heartbeat;
  private final CacheDirectory cache;
  private boolean closed;

  private LockFile(CacheDirectory cache, Path file, long heartbeatMillis) {
    this.cache = cache;
    this.file = file;
    this.heartbeat = heartbeatMillis <= 0 ? null : HEARTBEATS.scheduleAtFixedRate(this::beat, heartbeatMillis,
        heartbeatMillis, TimeUnit.MILLISECONDS);
  }

  /**
   * Tries once to create the lock file; returns null if it exists. The holder's identity is written to a
   * temporary file first, which is then linked to the lock's name (atomic, and failing if the name exists):
   * a lock file is never seen empty, and a full disk leaves no lock file behind, only the temporary one,
   * which is removed.
   */
  static LockFile tryCreate(CacheDirectory cache, Path file, long heartbeatMillis) throws IOException {
    byte[] identity = Holder.self().serialize().getBytes(StandardCharsets.UTF_8);
    // Readable by all: in a group cache the other members read who holds it; it holds no secret. A failure to
    // make the temporary file is thrown; the answers below to a failed write or link come before it is removed.
    AtomicFile tmp = AtomicFile.create(file, file.getFileName().toString(),
        PosixFilePermissions.fromString("rw-r--r--"), cache::op);
    try {
      tmp.write(identity).link();
      return new LockFile(cache, file, heartbeatMillis);
    } catch (FileAlreadyExistsException e) {
      return null;
    } catch (UnsupportedOperationException | FileSystemException e) {
      return createDirectly(cache, file, identity, heartbeatMillis); // a file system without hard links
    } finally {
      tmp.close();
    }
  }

  /** Creates the lock file in place ({@code O_EXCL}); if its identity cannot be written, removes it again. */
  private static LockFile createDirectly(CacheDirectory cache, Path file, byte[] identity, long heartbeatMillis)
      throws IOException {
    try {
      cache.op();
      Files.write(file, identity, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
      return new LockFile(cache, file, heartbeatMillis);
    } catch (FileAlreadyExistsException e) {
      return null;
    } catch (IOException e) {
      cache.delete(file, "cache lock that could not be written");
      throw e;
    }
  }

  private void beat() {
    try {
      Files.setLastModifiedTime(file, FileTime.fromMillis(System.currentTimeMillis()));
    } catch (IOException e) {
      log.warn("cannot refresh cache lock {}: {}", file, e.toString());
    }
  }

  /** The lock file. */
  public Path file() {
    return file;
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (heartbeat != null) {
      heartbeat.cancel(false);
    }
    try {
      cache.op();
      Files.deleteIfExists(file);
    } catch (IOException e) {
      log.warn("cannot remove cache lock {}: {}", file, e.toString());
    }
  }

  private static final String HOST = hostIdentity();

  /**
   * This host's identity in lock files, without DNS (some nodes cannot resolve their own name): the
   * kernel's node name, plus the start of the boot id and of the machine id, so that two nodes that share
   * a name (containers from one image, unconfigured nodes) still differ, plus the pid namespace, in which
   * alone a holder's pid means something.
   */
  public static String hostName() {
    return HOST;
  }

  private static String hostIdentity() {
    String node = firstLine(Path.of("/proc/sys/kernel/hostname"));
    if (node.isEmpty()) {
      node = System.getenv().getOrDefault("HOSTNAME", "unknown-host");
    }
    StringBuilder id = new StringBuilder(node);
    for (String f : new String[] {"/proc/sys/kernel/random/boot_id", "/etc/machine-id"}) {
      String v = firstLine(Path.of(f)).replace("-", "");
      if (!v.isEmpty()) {
        id.append('/').append(v, 0, Math.min(8, v.length()));
      }
    }
    // Containers on one machine share its boot id, and may share a name; their pids are only comparable
    // within one pid namespace, which is therefore part of the identity.
    try {
      String ns = Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString().replaceAll("\\D", "");
      if (!ns.isEmpty()) {
        id.append("/pid:").append(ns);
      }
    } catch (IOException | RuntimeException e) {
      // no pid namespaces here
    }
    return id.toString();
  }

  private static String firstLine(Path file) {
    try {
      return Files.readAllLines(file, StandardCharsets.UTF_8).stream().findFirst().orElse("").trim();
    } catch (IOException | RuntimeException e) {
      return "";
    }
  }

  private static long processStart(ProcessHandle p) {
    return p.info().startInstant().map(Instant::toEpochMilli).orElse(0L);
  }
}
