package org.mpibuild.internal.cache;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import org.mpibuild.CorruptBinaryException;
import org.mpibuild.internal.wire.Envelope;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Listing, verifying and evicting the cache's entries: what the CLI's cache commands and the size limit do. */
final class CacheMaintenance {
  private static final Logger log = LoggerFactory.getLogger(CacheMaintenance.class);
  private final CacheDirectory d;

  CacheMaintenance(CacheDirectory d) {
    this.d = d;
  }

  /** Lists every entry (reading headers and metadata, not verifying binaries), most recently used first. */
  List<KernelCache.Listing> list() throws IOException {
    List<KernelCache.Listing> out = new ArrayList<>();
    for (Path f : d.filesIn(d.entries)) {
      String name = f.getFileName().toString();
      BasicFileAttributes a;
      try {
        a = Files.readAttributes(f, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      } catch (IOException e) {
        continue; // removed meanwhile
      }
      Instant lastUse = a.lastModifiedTime().toInstant();
      if (CacheFiles.isTemporary(name) && CacheDirectory.ownFile(f)) {
        continue; // an entry being written
      }
      if (!CacheDirectory.ownFile(f)) {
        if (!Files.exists(f, LinkOption.NOFOLLOW_LINKS)) {
          continue; // removed meanwhile
        }
        out.add(new KernelCache.Listing(name, f, a.size(), lastUse, "?", "?", List.of(), "foreign",
            "not a file of this cache (" + (a.isSymbolicLink() ? "a symbolic link" : a.isRegularFile()
                ? "a name the cache never writes" : "not a regular file") + "); left alone"));
        continue;
      }
      String key = CacheFiles.keyOfEntry(name);
      long size = a.size();
      try {
        Envelope e = EntryCodec.decode(key, EntryCodec.read(f, Long.MAX_VALUE), d.signing());
        Envelope.Metadata m = e.metadata();
        out.add(new KernelCache.Listing(key, f, size, lastUse, m.backend(), m.target(), m.kernelNames(),
            e.status().name().toLowerCase(Locale.ROOT), null));
      } catch (NoSuchFileException ex) {
        continue; // removed meanwhile, by a job's eviction or another gc
      } catch (EntrySigning.UntrustedEntryException ex) {
        out.add(new KernelCache.Listing(key, f, size, lastUse, "?", "?", List.of(), "untrusted", ex.getMessage()));
      } catch (CorruptBinaryException ex) {
        out.add(new KernelCache.Listing(key, f, size, lastUse, "?", "?", List.of(), "corrupt", ex.getMessage()));
      }
    }
    out.sort(Comparator.comparing(KernelCache.Listing::lastUse).reversed());
    return out;
  }

  /** Checks every entry fully; moves bad ones aside when {@code remove}. Returns the bad ones. */
  List<KernelCache.Listing> verify(boolean remove) throws IOException {
    List<KernelCache.Listing> bad = new ArrayList<>();
    for (KernelCache.Listing l : list()) {
      if (l.problem() != null) {
        bad.add(l);
        if (remove && !l.status().equals("foreign")) {
          d.quarantine(l.file(), l.key());
        }
      }
    }
    return bad;
  }

  /**
   * Removes entries unused for longer than {@code maxAge} (when not null), then the least recently used
   * ones until the cache holds at most {@code maxBytes}; empties the quarantine. Returns what was removed.
   */
  List<Path> gc(long maxBytes, Duration maxAge) throws IOException {
    d.requireWritable();
    List<Path> removed = new ArrayList<>();
    Instant cutoff = maxAge == null ? null : Instant.now().minus(maxAge);
    record Sized(Path file, long bytes, Instant lastUse) {}
    List<Sized> files = new ArrayList<>();
    long total = 0;
    for (Path f : d.entryFiles()) {
      BasicFileAttributes a = attributes(f);
      if (a != null) { // else removed meanwhile, by a job's eviction or another gc
        files.add(new Sized(f, a.size(), a.lastModifiedTime().toInstant()));
        total += a.size();
      }
    }
    files.sort(Comparator.comparing(Sized::lastUse));
    for (Sized s : files) {
      if ((cutoff != null && s.lastUse().isBefore(cutoff)) || total > maxBytes) {
        total -= s.bytes();
        if (Files.deleteIfExists(s.file())) {
          removed.add(s.file());
        }
      }
    }
    for (Path f : d.filesIn(d.quarantine)) {
      if (CacheDirectory.ownFile(f) && Files.deleteIfExists(f)) {
        removed.add(f);
      }
    }
    return removed;
  }

  /** {@code f}'s attributes, not following a link; null if it no longer exists. */
  private static BasicFileAttributes attributes(Path f) throws IOException {
    try {
      return Files.readAttributes(f, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    } catch (NoSuchFileException e) {
      return null;
    }
  }

  /** Removes every entry, lock and quarantined file; keeps the directory. Returns how many files. */
  int clear() throws IOException {
    d.requireWritable();
    int n = 0;
    for (Path sub : List.of(d.entries, d.locks, d.quarantine)) {
      for (Path f : d.filesIn(sub)) {
        if (CacheDirectory.ownFile(f) && Files.deleteIfExists(f)) {
          n++;
        }
      }
    }
    return n;
  }

  /** Number of files in the quarantine. */
  int quarantined() throws IOException {
    return d.filesIn(d.quarantine).size();
  }

  /** After a store: evicts the least recently used entries beyond the size limit, never {@code keep}. */
  void evict(String keep) throws IOException {
    record Sized(Path file, long bytes, Instant lastUse) {}
    List<Sized> sized = new ArrayList<>();
    long total = 0;
    for (Path f : d.entryFiles()) {
      d.op();
      try {
        long size = Files.size(f);
        total += size;
        sized.add(new Sized(f, size, CacheDirectory.mtime(f)));
      } catch (NoSuchFileException e) {
        // removed by another process meanwhile
      }
    }
    if (total <= d.settings.maxBytes()) {
      return;
    }
    sized.sort(Comparator.comparing(Sized::lastUse));
    for (Sized s : sized) {
      if (total <= d.settings.maxBytes()) {
        break;
      }
      if (s.file().equals(d.entryFile(keep))) {
        continue;
      }
      d.op();
      if (Files.deleteIfExists(s.file())) {
        total -= s.bytes();
        log.debug("evicted cache entry {} (least recently used)", s.file().getFileName());
      }
    }
  }
}
